//! The commands rvl prints for a person to run next (doctor's fixes, setup's "undo with", a
//! blocked step's fix). Each is built here from how rvl was pointed at the system, so a command
//! printed after looking at an image carries the same `--root`, and one printed for a board
//! chosen with `--board`/`--profiles`/`--manifest` carries those: pasted, it changes the
//! system that was looked at, never the machine rvl happens to run on. `sudo` is added only
//! where it is needed: not for root, and not for a `--root` tree the user owns.
//!
//! Imports nothing but the quoting every printed word goes through.

use std::path::Path;

use crate::shell::quote;

/// How this run of rvl was pointed at a system: what every command it prints must repeat.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Invocation {
    /// `--root DIR` as given; None for the running system.
    pub root: Option<String>,
    /// The board profile the commands name (`--board ID`), when one was chosen.
    pub board: Option<String>,
    /// `--profiles DIR`, when given.
    pub profiles: Option<String>,
    /// `--manifest FILE`, when given.
    pub manifest: Option<String>,
    /// Whether changing this system needs `sudo` (not when rvl runs as root, nor for a
    /// `--root` tree the user owns).
    pub sudo: bool,
}

impl Invocation {
    /// The running system, changed through `sudo` by a user who is not root.
    pub fn live(sudo: bool) -> Invocation {
        Invocation {
            sudo,
            ..Invocation::default()
        }
    }

    /// From the options every system verb takes. `root` is None for the running system.
    pub fn new(
        root: Option<&Path>,
        board: Option<&str>,
        profiles: Option<&Path>,
        manifest: Option<&Path>,
        sudo: bool,
    ) -> Invocation {
        let text = |p: &Path| p.to_string_lossy().into_owned();
        Invocation {
            root: root.map(text),
            board: board.map(str::to_string),
            profiles: profiles.map(text),
            manifest: manifest.map(text),
            sudo,
        }
    }

    /// The same invocation naming this board (doctor names the profile it detected).
    pub fn with_board(mut self, board: Option<&str>) -> Invocation {
        if let Some(b) = board {
            self.board = Some(b.to_string());
        }
        self
    }

    /// True when rvl looks at another tree than the running system (`--root`).
    pub fn is_image(&self) -> bool {
        self.root.is_some()
    }

    /// `[sudo ]rvl setup --root R --board B --profiles P --manifest M ARGS`: a command that
    /// plans, so it carries everything that decides the plan.
    pub fn setup(&self, args: &str) -> String {
        self.command("setup", args, true, true)
    }

    /// `[sudo ]rvl setup --root R ARGS` for setup's modes that do not plan (`--rollback`,
    /// `--run`): they read setup's journal under the root and nothing else.
    pub fn setup_journal(&self, args: &str) -> String {
        self.command("setup", args, true, false)
    }

    /// `rvl VERB --root R ARGS` for a verb that only reads (`setup --status`, `status`); with
    /// `planning`, the board, profiles and manifest too (`doctor`).
    pub fn read_only(&self, verb: &str, args: &str, planning: bool) -> String {
        self.command(verb, args, false, planning)
    }

    fn command(&self, verb: &str, args: &str, changes: bool, planning: bool) -> String {
        let mut words: Vec<String> = Vec::new();
        if changes && self.sudo {
            words.push("sudo".into());
        }
        words.push("rvl".into());
        words.push(verb.into());
        if let Some(r) = &self.root {
            words.push(format!("--root {}", quote(r)));
        }
        if planning {
            if let Some(b) = &self.board {
                words.push(format!("--board {}", quote(b)));
            }
            if let Some(p) = &self.profiles {
                words.push(format!("--profiles {}", quote(p)));
            }
            if let Some(m) = &self.manifest {
                words.push(format!("--manifest {}", quote(m)));
            }
        }
        if !args.is_empty() {
            words.push(args.into());
        }
        words.join(" ")
    }

    /// A command that is not rvl's (`sudo reboot`, `sudo apt install …`, `echo … | sudo tee
    /// /sys/…`): on the running system as it is; for an image, to be run on the board that
    /// boots it, since run here it would change this machine.
    pub fn on_board(&self, cmd: &str) -> String {
        if self.is_image() {
            format!("on the board that boots this image: {cmd}")
        } else {
            cmd.to_string()
        }
    }

    /// `[sudo ]rm -rf PATH` for a directory of the system looked at: the image's copy of an
    /// in-root path under `--root`, where this machine's would be the wrong one.
    pub fn remove_tree(&self, in_root: &str) -> String {
        let path = match &self.root {
            Some(r) => format!(
                "{}/{}",
                r.trim_end_matches('/'),
                in_root.trim_start_matches('/')
            ),
            None => in_root.to_string(),
        };
        let sudo = if self.sudo { "sudo " } else { "" };
        format!("{sudo}rm -rf {}", quote(&path))
    }

    /// What starts what setup changed for the next boot: a reboot here, the board's next boot
    /// from the image.
    pub fn reboot_advice(&self, what: &str) -> String {
        match &self.root {
            None => format!("Reboot to start {what}."),
            Some(r) => format!(
                "The image at {r} boots {what} the next time a board starts from it (this machine is not changed; do not reboot it for this)."
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_for_an_image_carries_its_root_board_profiles_and_manifest() {
        let inv = Invocation::new(
            Some(Path::new("img dir")),
            Some("boltzmann"),
            Some(Path::new("p")),
            Some(Path::new("m.yaml")),
            false,
        );
        assert_eq!(
            inv.setup("--only kernel"),
            "rvl setup --root 'img dir' --board boltzmann --profiles p --manifest m.yaml --only kernel"
        );
        assert_eq!(
            inv.setup_journal("--rollback"),
            "rvl setup --root 'img dir' --rollback"
        );
        assert_eq!(
            inv.read_only("setup", "--status", false),
            "rvl setup --root 'img dir' --status"
        );
        assert!(inv.on_board("sudo reboot").starts_with("on the board"));
        assert_eq!(inv.remove_tree("/opt/rvl/x"), "rm -rf 'img dir/opt/rvl/x'");
        assert!(!inv.reboot_advice("x").starts_with("Reboot"));
    }

    #[test]
    fn the_running_system_gets_sudo_only_when_it_needs_it() {
        assert_eq!(
            Invocation::live(true)
                .with_board(Some("ampere"))
                .setup("--only firmware"),
            "sudo rvl setup --board ampere --only firmware"
        );
        assert_eq!(
            Invocation::live(false).setup_journal("--rollback"),
            "rvl setup --rollback"
        );
        assert_eq!(
            Invocation::live(true).read_only("setup", "--status", false),
            "rvl setup --status"
        );
        assert_eq!(
            Invocation::live(true).on_board("sudo reboot"),
            "sudo reboot"
        );
    }
}
