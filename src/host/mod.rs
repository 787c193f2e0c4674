//! The only code that touches the machine. Everything reads (and writes) through a [`Root`].

pub mod boot;
pub mod chase;
pub mod cpus;
pub mod devfreq;
pub mod devicetree;
pub mod env;
pub mod gather;
pub mod initramfs;
pub mod kernel;
pub mod live;
pub mod llama;
pub mod mem;
pub mod mesa;
pub mod root;
pub mod rpc;
pub mod stamp;
pub mod sysfs;

pub use gather::{gather, GatherOptions};
pub use root::Root;
