//! Documented process exit codes. Every verb maps its outcome to one of these, the same in
//! human and `--json` mode. The table is repeated in README.md ("Exit status"); keep both in step.

/// Success: doctor found no failing check / setup applied or had nothing to do / bench ran.
pub const OK: i32 = 0;
/// Doctor: at least one check failed (warnings count too with `--strict`).
/// Smoke-bench: the run finished but a kernel produced a wrong result or a Vulkan call failed;
/// with `--gguf`, a llama-bench run did not end ok.
/// Serve: refused, a blocking doctor check fails or rvl's llama.cpp is not installed.
pub const PROBLEMS: i32 = 1;
/// Usage error: bad flags or arguments (clap's own code).
pub const USAGE: i32 = 2;
/// Bad input data: a profile, manifest, saved result or other file rvl was told to read is malformed.
pub const BAD_INPUT: i32 = 3;
/// Needs root, or permission denied on a path rvl must write.
pub const PERMISSION: i32 = 4;
/// The board is not supported (no profile, or the host is not an RK3588) for the requested action.
pub const UNSUPPORTED: i32 = 5;
/// A download or its checksum/size verification failed; nothing was installed.
pub const DOWNLOAD: i32 = 6;
/// Another rvl run holds the lock.
pub const LOCKED: i32 = 7;
/// No usable Vulkan device: loader missing, no ICD, or the device lacks what is required.
pub const NO_VULKAN: i32 = 8;
/// Setup refused to prompt: not a terminal and `--yes` not given; or the user declined.
pub const NOT_CONFIRMED: i32 = 9;
/// A step failed and rollback could not restore everything, or `--rollback` left paths that
/// changed after setup (or would boot a missing kernel): `--status` lists what is left.
pub const ROLLBACK_INCOMPLETE: i32 = 10;
/// Setup: a step cannot fix what it is for on this system (a kernel that is not installed, no
/// overlay for the board, no `dtc`); the rest of the plan was planned or applied, and the output
/// names each blocked step with what to do first.
pub const BLOCKED: i32 = 11;
/// Setup: a step failed (a tool failed, no space left on the device, a read-only file system)
/// and everything the run had changed was put back.
pub const STEP_FAILED: i32 = 12;
/// Internal error (a bug). Panics are mapped here too instead of Rust's default 101.
pub const INTERNAL: i32 = 70;

/// Every status with a one-line meaning, for the man page; a test keeps it in step with the
/// constants above and with README.md's table.
pub const TABLE: &[(i32, &str)] = &[
    (OK, "success: no failing check / setup applied or had nothing to do / benchmark ran"),
    (PROBLEMS, "doctor: a check failed; smoke-bench: a kernel gave a wrong result or a Vulkan call failed, or a --gguf run did not end ok; serve: refused (a blocking check fails, or no rvl llama.cpp)"),
    (USAGE, "usage error"),
    (BAD_INPUT, "bad input file (profile, manifest, saved result, journal)"),
    (PERMISSION, "needs root, or permission denied"),
    (UNSUPPORTED, "unsupported board for this action (no profile matches, or setup --board on a machine that is not a board)"),
    (DOWNLOAD, "download or checksum verification failed; nothing installed"),
    (LOCKED, "another rvl run holds the lock"),
    (NO_VULKAN, "no usable Vulkan device"),
    (NOT_CONFIRMED, "setup not confirmed (no terminal and no --yes, or declined)"),
    (ROLLBACK_INCOMPLETE, "rollback incomplete: a path changed after setup, or a failed step could not be undone (see rvl setup --status)"),
    (BLOCKED, "setup: a step is blocked (a missing kernel or tool, a release that cannot build Mesa, a download that could not be made, a step --only left out that it needs); its fix is printed, the rest of the plan ran"),
    (STEP_FAILED, "setup: a step failed (a tool, no space left, a read-only file system); everything the run changed was put back"),
    (INTERNAL, "internal error (a bug)"),
];
