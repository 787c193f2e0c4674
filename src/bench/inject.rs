//! Failure injection for tests: `RVL_BENCH_INJECT_FAILURE=UBATCH:CALL[:RESULT][,...]` makes the
//! layer-stack run at that ubatch fail at that Vulkan call as if the driver had returned RESULT
//! (default VK_ERROR_OUT_OF_DEVICE_MEMORY). It lets the tests prove that a failing ubatch is
//! reported with its call and result and that the sweep goes on, on any driver.

use ash::vk;

use crate::vulkan::error::{parse_result, VkError};

pub const ENV: &str = "RVL_BENCH_INJECT_FAILURE";

/// The calls the stack runner checks before making them.
pub const CALLS: &[&str] = &[
    "vkAllocateMemory",
    "vkBeginCommandBuffer",
    "vkEndCommandBuffer",
    "vkQueueSubmit",
    "vkWaitForFences",
];

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Injector {
    rules: Vec<(u32, String, vk::Result)>,
}

impl Injector {
    /// The rules `RVL_BENCH_INJECT_FAILURE` gives (read once into the Settings); none when unset.
    pub fn from_setting(spec: Option<&str>) -> Result<Injector, String> {
        match spec {
            Some(spec) if !spec.trim().is_empty() => Injector::parse(spec),
            _ => Ok(Injector::default()),
        }
    }

    pub fn parse(spec: &str) -> Result<Injector, String> {
        let mut rules = Vec::new();
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let parts: Vec<&str> = item.split(':').collect();
            let bad = || {
                format!(
                    "{ENV}: {item:?} is not UBATCH:CALL[:RESULT] \
                     (CALL one of {}; RESULT like VK_ERROR_DEVICE_LOST)",
                    CALLS.join(", ")
                )
            };
            if !(2..=3).contains(&parts.len()) {
                return Err(bad());
            }
            let ubatch: u32 = parts[0].parse().map_err(|_| bad())?;
            if !CALLS.contains(&parts[1]) {
                return Err(bad());
            }
            let result = match parts.get(2) {
                Some(r) => parse_result(r).ok_or_else(bad)?,
                None => vk::Result::ERROR_OUT_OF_DEVICE_MEMORY,
            };
            rules.push((ubatch, parts[1].to_string(), result));
        }
        Ok(Injector { rules })
    }

    /// The injected error for `call` at `ubatch`, if a rule says so.
    pub fn check(&self, ubatch: u32, call: &str) -> Result<(), VkError> {
        match self
            .rules
            .iter()
            .find(|(u, c, _)| *u == ubatch && c == call)
        {
            Some((_, c, r)) => {
                let mut e = VkError::new(c, *r);
                e.injected = true;
                Err(e)
            }
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rules_and_fires_only_where_asked() {
        let inj = Injector::parse("128:vkEndCommandBuffer, 256:vkQueueSubmit:VK_ERROR_DEVICE_LOST")
            .unwrap();
        assert!(inj.check(64, "vkEndCommandBuffer").is_ok());
        let e = inj.check(128, "vkEndCommandBuffer").unwrap_err();
        assert_eq!(e.result, "VK_ERROR_OUT_OF_DEVICE_MEMORY");
        assert!(e.injected);
        let e = inj.check(256, "vkQueueSubmit").unwrap_err();
        assert!(e.is_device_lost());
    }

    #[test]
    fn rejects_malformed_rules_with_the_expected_form() {
        for bad in [
            "x:vkQueueSubmit",
            "128",
            "128:vkFoo",
            "128:vkQueueSubmit:VK_NOPE",
            "1:2:3:4",
        ] {
            let err = Injector::parse(bad).unwrap_err();
            assert!(err.contains("UBATCH:CALL[:RESULT]"), "{bad}: {err}");
        }
        assert_eq!(Injector::parse("").unwrap(), Injector::default());
    }
}
