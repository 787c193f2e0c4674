//! The only code that touches the machine. Everything reads (and writes) through a [`Root`].

pub mod root;

pub use root::Root;
