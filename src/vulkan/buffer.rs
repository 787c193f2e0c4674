//! Storage buffers. On UMA and CPU devices the memory is mapped directly; on discrete GPUs the
//! data lives in device-local memory and travels through a host-visible staging buffer, so the
//! kernels read VRAM, not host memory over PCIe.

use ash::vk;

use super::command::{one_shot, BufferHandle};
use super::device::Gpu;
use super::error::{Call, VkError};

pub struct Buffer {
    pub(super) buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    pub size: u64,
    mapped: Option<*mut u8>,
    device: ash::Device,
}

fn find_memory_type(gpu: &Gpu, type_bits: u32, want: vk::MemoryPropertyFlags) -> Option<u32> {
    (0..gpu.memory.memory_type_count).find(|&i| {
        type_bits & (1 << i) != 0
            && gpu.memory.memory_types[i as usize]
                .property_flags
                .contains(want)
    })
}

impl Buffer {
    /// A storage buffer of `size` bytes (at least 16), host-mapped when `host` is true.
    fn create(
        gpu: &Gpu,
        size: u64,
        host: bool,
        usage: vk::BufferUsageFlags,
    ) -> Result<Buffer, VkError> {
        let size = size.max(16);
        let d = &gpu.device;
        // SAFETY: valid device; objects are destroyed on the error paths and in Drop.
        unsafe {
            let buffer = d
                .create_buffer(
                    &vk::BufferCreateInfo::default()
                        .size(size)
                        .usage(usage)
                        .sharing_mode(vk::SharingMode::EXCLUSIVE),
                    None,
                )
                .call("vkCreateBuffer")?;
            let req = d.get_buffer_memory_requirements(buffer);
            let coherent =
                vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
            let choice = if host {
                find_memory_type(
                    gpu,
                    req.memory_type_bits,
                    coherent | vk::MemoryPropertyFlags::DEVICE_LOCAL,
                )
                .or_else(|| find_memory_type(gpu, req.memory_type_bits, coherent))
            } else {
                find_memory_type(
                    gpu,
                    req.memory_type_bits,
                    vk::MemoryPropertyFlags::DEVICE_LOCAL,
                )
                .or_else(|| {
                    find_memory_type(gpu, req.memory_type_bits, vk::MemoryPropertyFlags::empty())
                })
            };
            let Some(type_index) = choice else {
                d.destroy_buffer(buffer, None);
                return Err(VkError::new(
                    "vkAllocateMemory",
                    vk::Result::ERROR_OUT_OF_DEVICE_MEMORY,
                ));
            };
            let memory = match d
                .allocate_memory(
                    &vk::MemoryAllocateInfo::default()
                        .allocation_size(req.size)
                        .memory_type_index(type_index),
                    None,
                )
                .call("vkAllocateMemory")
            {
                Ok(m) => m,
                Err(e) => {
                    d.destroy_buffer(buffer, None);
                    return Err(e);
                }
            };
            let mut this = Buffer {
                buffer,
                memory,
                size,
                mapped: None,
                device: d.clone(),
            };
            d.bind_buffer_memory(buffer, memory, 0)
                .call("vkBindBufferMemory")?;
            if host {
                let ptr = d
                    .map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty())
                    .call("vkMapMemory")?;
                this.mapped = Some(ptr.cast());
            }
            Ok(this)
        }
    }

    /// The handle a recording names (see [`super::command::Recording::zero`]).
    pub fn handle(&self) -> BufferHandle {
        self.buffer
    }

    /// A buffer the kernels read and write; mapped on UMA/CPU devices, device-local otherwise.
    pub fn storage(gpu: &Gpu, size: u64) -> Result<Buffer, VkError> {
        let usage = vk::BufferUsageFlags::STORAGE_BUFFER
            | vk::BufferUsageFlags::TRANSFER_DST
            | vk::BufferUsageFlags::TRANSFER_SRC;
        Buffer::create(gpu, size, gpu.direct_map, usage)
    }

    /// Copy `bytes` into the start of the buffer.
    pub fn upload(&self, gpu: &Gpu, bytes: &[u8]) -> Result<(), VkError> {
        assert!(
            bytes.len() as u64 <= self.size,
            "upload larger than the buffer"
        );
        if let Some(ptr) = self.mapped {
            // SAFETY: the mapping covers `size` bytes and is coherent.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), ptr, bytes.len()) };
            return Ok(());
        }
        let staging = Buffer::create(
            gpu,
            bytes.len() as u64,
            true,
            vk::BufferUsageFlags::TRANSFER_SRC,
        )?;
        staging.upload(gpu, bytes)?;
        copy(gpu, &staging, self, bytes.len() as u64)
    }

    /// Read the first `len` bytes back.
    pub fn download(&self, gpu: &Gpu, len: u64) -> Result<Vec<u8>, VkError> {
        let len = len.min(self.size);
        if let Some(ptr) = self.mapped {
            let mut out = vec![0u8; len as usize];
            // SAFETY: the mapping covers `size` bytes; the GPU finished writing (callers wait).
            unsafe { std::ptr::copy_nonoverlapping(ptr, out.as_mut_ptr(), len as usize) };
            return Ok(out);
        }
        let staging = Buffer::create(gpu, len, true, vk::BufferUsageFlags::TRANSFER_DST)?;
        copy(gpu, self, &staging, len)?;
        staging.download(gpu, len)
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: the bench waits for the queue before dropping buffers it used.
        unsafe {
            if self.mapped.is_some() {
                self.device.unmap_memory(self.memory);
            }
            self.device.destroy_buffer(self.buffer, None);
            self.device.free_memory(self.memory, None);
        }
    }
}

fn copy(gpu: &Gpu, from: &Buffer, to: &Buffer, len: u64) -> Result<(), VkError> {
    one_shot(gpu, |rec| rec.copy(from, to, len))
}
