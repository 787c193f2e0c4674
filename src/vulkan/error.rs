//! A failed Vulkan call, kept as data: which entry point and which `VkResult`. The sweep reports
//! these per ubatch and kernel instead of stopping, so a driver limit shows up as a result.

#[cfg(feature = "bench")]
use ash::vk;
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VkError {
    /// The Vulkan entry point that returned the error, e.g. `vkEndCommandBuffer`.
    pub call: String,
    /// The `VkResult` name, e.g. `VK_ERROR_OUT_OF_DEVICE_MEMORY`.
    pub result: String,
    /// Set when the error did not come from the driver but from `RVL_BENCH_INJECT_FAILURE`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub injected: bool,
}

impl VkError {
    #[cfg(feature = "bench")]
    pub fn new(call: &str, result: vk::Result) -> Self {
        VkError {
            call: call.to_string(),
            result: result_name(result),
            injected: false,
        }
    }

    /// True when the device is gone and nothing more can run on it.
    pub fn is_device_lost(&self) -> bool {
        self.result == "VK_ERROR_DEVICE_LOST"
    }
}

impl std::fmt::Display for VkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} returned {}", self.call, self.result)?;
        if self.injected {
            write!(f, " (injected)")?;
        }
        Ok(())
    }
}

impl std::error::Error for VkError {}

/// `VK_ERROR_OUT_OF_DEVICE_MEMORY`-style name of a result code.
#[cfg(feature = "bench")]
pub fn result_name(result: vk::Result) -> String {
    // ash's Debug output is the enum name without the VK_ prefix, or a number for unknown codes.
    let name = format!("{result:?}");
    if name.chars().next().is_some_and(|c| c.is_ascii_alphabetic()) {
        format!("VK_{name}")
    } else {
        format!("VkResult({})", result.as_raw())
    }
}

/// Parse a result name as printed by [`result_name`] (used by failure injection).
#[cfg(feature = "bench")]
pub fn parse_result(name: &str) -> Option<vk::Result> {
    const KNOWN: &[vk::Result] = &[
        vk::Result::ERROR_OUT_OF_HOST_MEMORY,
        vk::Result::ERROR_OUT_OF_DEVICE_MEMORY,
        vk::Result::ERROR_INITIALIZATION_FAILED,
        vk::Result::ERROR_DEVICE_LOST,
        vk::Result::ERROR_MEMORY_MAP_FAILED,
        vk::Result::ERROR_TOO_MANY_OBJECTS,
        vk::Result::ERROR_FRAGMENTED_POOL,
        vk::Result::ERROR_UNKNOWN,
        vk::Result::TIMEOUT,
    ];
    KNOWN.iter().copied().find(|r| result_name(*r) == name)
}

/// Shorthand for mapping an ash result into a [`VkError`] naming the call.
#[cfg(feature = "bench")]
pub trait Call<T> {
    fn call(self, name: &str) -> Result<T, VkError>;
}

#[cfg(feature = "bench")]
impl<T> Call<T> for Result<T, vk::Result> {
    fn call(self, name: &str) -> Result<T, VkError> {
        self.map_err(|r| VkError::new(name, r))
    }
}

#[cfg(all(test, feature = "bench"))]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let e = VkError::new("vkEndCommandBuffer", vk::Result::ERROR_OUT_OF_DEVICE_MEMORY);
        assert_eq!(e.result, "VK_ERROR_OUT_OF_DEVICE_MEMORY");
        assert_eq!(
            e.to_string(),
            "vkEndCommandBuffer returned VK_ERROR_OUT_OF_DEVICE_MEMORY"
        );
        assert_eq!(
            parse_result("VK_ERROR_DEVICE_LOST"),
            Some(vk::Result::ERROR_DEVICE_LOST)
        );
        assert_eq!(parse_result("VK_NOPE"), None);
        assert!(VkError::new("vkQueueSubmit", vk::Result::ERROR_DEVICE_LOST).is_device_lost());
    }
}
