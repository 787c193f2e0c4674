//! Device-tree overlays rvl ships as source (`kernel/overlays/*.dts`), for boards whose mainline
//! device tree leaves `&gpu` disabled. The doctor names `rvl setup --only gpu-overlay` only for
//! a board listed here, so it never suggests a fix setup cannot carry out.

/// An overlay source embedded in the binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overlay {
    /// The installed file's stem (`rvl-…`; the journal validator accepts only `rvl*` overlays).
    pub name: &'static str,
    /// The profile ids it is for.
    pub boards: &'static [&'static str],
    /// The `.dts` text.
    pub source: &'static str,
}

/// Every shipped overlay.
pub const OVERLAYS: &[Overlay] = &[];

/// The overlay that enables the GPU on this board's mainline device tree, if rvl ships one.
pub fn for_board(board: &str) -> Option<&'static Overlay> {
    OVERLAYS.iter().find(|o| o.boards.contains(&board))
}
