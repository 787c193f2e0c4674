//! How panvk cuts one compute dispatch into CSF tasks, and how many shader cores and warps that
//! feeds: the figure that tells "fewer cores got work" apart from "the clock was low" when a
//! measured peak falls short of its prediction.
//!
//! panvk emits one `RUN_COMPUTE` per dispatch with a task axis and a task increment
//! (`panvk_per_arch(calculate_task_axis_and_increment)`, `csf/panvk_cmd_buffer.h`). A task is
//! `increment` workgroups along the axis times the whole extent of the lower axes, and one task
//! runs on one core; a core runs at most `max_tasks_per_core` tasks and `max_threads_per_core`
//! threads at a time, fewer threads when the shader needs more than 32 registers (Mesa's
//! `pan_calc_workgroups_per_task` and `pan_compute_max_thread_count`). The rule changed in Mesa
//! 26.0 ("panvk: fix calculate_task_axis_and_increment" and "rework ...", 26.0.0 release notes):
//!
//! - **Mesa 26.0 and later**: tasks of `max_threads / max_tasks_per_core` threads (256 on a
//!   G610), at most a core's even share of the workgroups, along x first.
//! - **up to 25.3**: the increment was grown along the *workgroup's own* local size instead of
//!   the grid, so a workgroup narrower than 32 invocations (x² < 1024) fell through to the z
//!   axis with an increment of 1: every workgroup of a z slice in one task, on one core.
//!
//! The lab recorded the parameters 26.2 emits for these dispatches and checked this model
//! against them (scripts/panvk-lab/task-split.sh, docs/panvk-lab.md "Task split").

use serde::Serialize;

use crate::vulkan::DeviceInfo;

/// The G610's THREAD_FEATURES (0x4010000: 4 tasks and 65536 registers per core) and thread
/// limits (panthor's GPU_INFO as dumped from a G610 in Mesa's panfrost_noop.c).
pub const G610_TASKS_PER_CORE: u32 = 4;
pub const G610_REGISTERS_PER_CORE: u32 = 65536;
pub const G610_THREADS_PER_CORE: u32 = 2048;
pub const G610_THREADS_PER_WORKGROUP: u32 = 1024;
/// shader_present of the RK3588's G610 MC4: cores 0, 2, 16 and 18.
pub const G610_CORE_MASK: u64 = 0x50005;

/// The thread properties the split is computed from, and where they came from.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Limits {
    pub max_threads_per_workgroup: u32,
    pub max_threads_per_core: u32,
    pub max_tasks_per_core: u32,
    pub registers_per_core: u32,
    /// The cores compute may use (panvk: shader_present, all of them by default).
    pub core_mask: u64,
    /// Invocations per warp (the subgroup size).
    pub warp: u32,
    pub source: String,
}

impl Limits {
    /// A G610 MC4 as Mesa sees it.
    pub fn g610() -> Limits {
        Limits {
            max_threads_per_workgroup: G610_THREADS_PER_WORKGROUP,
            max_threads_per_core: G610_THREADS_PER_CORE,
            max_tasks_per_core: G610_TASKS_PER_CORE,
            registers_per_core: G610_REGISTERS_PER_CORE,
            core_mask: G610_CORE_MASK,
            warp: 16,
            source: "a Mali-G610 MC4's (shader_present 0x50005, 4 tasks and 2048 threads per core)"
                .into(),
        }
    }

    /// The device's own figures where Vulkan gives them (panvk: VK_ARM_shader_core_builtins'
    /// shaderCoreMask is panthor's shader_present, shaderWarpsPerCore is max_threads_per_core /
    /// (2 x subgroup), maxComputeWorkGroupInvocations is the workgroup limit), the G610's for
    /// the rest (tasks and registers per core are not exposed). None for other drivers.
    pub fn for_device(dev: &DeviceInfo) -> Option<Limits> {
        if !dev.is_panvk() {
            return None;
        }
        let mut l = Limits::g610();
        if dev.subgroup_size > 0 {
            l.warp = dev.subgroup_size;
        }
        if dev.max_workgroup_invocations > 0 {
            l.max_threads_per_workgroup = dev.max_workgroup_invocations;
        }
        match dev.shader_cores {
            Some(c) if c.core_mask != 0 => {
                l.core_mask = c.core_mask;
                if c.warps_per_core > 0 && l.warp > 0 {
                    l.max_threads_per_core = c.warps_per_core.saturating_mul(2 * l.warp);
                }
                l.source = format!(
                    "shader_present {:#x} and {} threads per core from the device \
                     (VK_ARM_shader_core_builtins); 4 tasks and 65536 registers per core: the G610's",
                    c.core_mask, l.max_threads_per_core
                );
            }
            _ => l.source = format!("the device gave no core mask: {}", l.source),
        }
        Some(l)
    }

    pub fn cores(&self) -> u32 {
        self.core_mask.count_ones()
    }

    /// Threads one task may hold per Mesa: the workgroup and core limits, and the register
    /// file at 32 or 64 registers per thread (`pan_compute_max_thread_count`).
    fn max_thread_count(&self, work_registers: u32) -> u32 {
        self.max_threads_per_workgroup
            .min(self.max_threads_per_core)
            .min(self.thread_capacity(work_registers))
    }

    /// Threads a core holds at once for a shader of this many registers.
    fn thread_capacity(&self, work_registers: u32) -> u32 {
        let aligned = if work_registers <= 32 { 32 } else { 64 };
        self.max_threads_per_core
            .min(self.registers_per_core / aligned)
    }
}

/// Which Mesa's rule applies.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// Mesa 26.0 and later.
    Mesa26,
    /// Mesa up to 25.3 (the published vkpeak run's 25.3).
    Mesa25,
}

impl Rule {
    /// The rule of a panvk whose driverInfo names Mesa `version` (major, minor).
    pub fn for_mesa(version: (u32, u32)) -> Rule {
        if version >= (26, 0) {
            Rule::Mesa26
        } else {
            Rule::Mesa25
        }
    }

    /// The rule of this device's panvk (its driverInfo's Mesa release; the newest rule when
    /// it names none).
    pub fn for_device(dev: &DeviceInfo) -> Rule {
        crate::vulkan::info::mesa_version(&dev.driver_info).map_or(Rule::Mesa26, Rule::for_mesa)
    }

    pub fn label(self) -> &'static str {
        match self {
            Rule::Mesa26 => "Mesa 26.0+",
            Rule::Mesa25 => "Mesa <= 25.3",
        }
    }
}

/// One dispatch's split and what it gives each core.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Split {
    pub rule: Rule,
    pub workgroup: [u32; 3],
    pub grid: [u32; 3],
    pub work_registers: u32,
    /// `x`, `y` or `z`.
    pub task_axis: char,
    pub task_increment: u32,
    pub workgroups_per_task: u64,
    pub threads_per_task: u64,
    pub tasks: u64,
    /// The compute core mask (panvk: shader_present) and its popcount.
    pub core_mask: u64,
    pub cores: u32,
    pub cores_with_work: u32,
    /// Per core at once: tasks, threads and warps (bounded by the task limit and the thread
    /// capacity), and that capacity.
    pub tasks_per_core: u64,
    pub threads_per_core: u64,
    pub warps_per_core: u64,
    pub thread_capacity: u32,
    /// Where the thread properties came from ([`Limits::source`]).
    pub source: String,
}

/// The task axis (0..=2) and increment `rule` gives the dispatch.
pub fn axis_and_increment(
    rule: Rule,
    l: &Limits,
    workgroup: [u32; 3],
    grid: [u32; 3],
    work_registers: u32,
) -> (usize, u32) {
    let max = l.max_thread_count(work_registers).max(1);
    let threads_wg = workgroup.iter().map(|&v| v.max(1)).product::<u32>();
    match rule {
        Rule::Mesa26 => {
            let total: u64 = grid.iter().map(|&v| u64::from(v)).product();
            if total == 0 {
                return (0, 1);
            }
            let per_core = total.div_ceil(u64::from(l.cores().max(1)));
            let threads_per_task = max.div_ceil(l.max_tasks_per_core.max(1));
            let per_task = u64::from(threads_per_task / threads_wg).clamp(1, per_core);
            let (mut axis, mut inc) = (0usize, per_task);
            for &n in &grid[..2] {
                if inc <= u64::from(n) {
                    break;
                }
                axis += 1;
                inc /= u64::from(n);
            }
            (axis, u32::try_from(inc).unwrap_or(u32::MAX))
        }
        Rule::Mesa25 => {
            // The axis grows with the workgroup's own dimensions, not the grid's.
            let mut threads = u64::from(threads_wg);
            for (axis, &n) in workgroup.iter().enumerate() {
                let n = u64::from(n.max(1));
                if threads * n >= u64::from(max) {
                    return (axis, (u64::from(max) / threads).max(1) as u32);
                }
                if axis == 2 {
                    return (axis, n as u32);
                }
                threads *= n;
            }
            (2, 1)
        }
    }
}

/// The split of one dispatch, or None for an empty grid.
pub fn split(
    rule: Rule,
    l: &Limits,
    workgroup: [u32; 3],
    grid: [u32; 3],
    work_registers: u32,
) -> Option<Split> {
    if grid.contains(&0) || workgroup.contains(&0) {
        return None;
    }
    let (axis, inc) = axis_and_increment(rule, l, workgroup, grid, work_registers);
    let g = grid.map(u64::from);
    let wg_per_task: u64 = u64::from(inc) * g[..axis].iter().product::<u64>();
    let tasks: u64 = g[axis].div_ceil(u64::from(inc)) * g[axis + 1..].iter().product::<u64>();
    let threads_wg: u64 = workgroup.iter().map(|&v| u64::from(v)).product();
    let warp = u64::from(l.warp.max(1));
    let cores = l.cores().max(1);
    let capacity = l.thread_capacity(work_registers);
    let tasks_per_core = tasks
        .div_ceil(u64::from(cores))
        .min(u64::from(l.max_tasks_per_core.max(1)));
    let threads_per_core = (tasks_per_core * wg_per_task * threads_wg).min(u64::from(capacity));
    Some(Split {
        rule,
        workgroup,
        grid,
        work_registers,
        task_axis: ['x', 'y', 'z'][axis],
        task_increment: inc,
        workgroups_per_task: wg_per_task,
        threads_per_task: wg_per_task * threads_wg,
        tasks,
        core_mask: l.core_mask,
        cores,
        cores_with_work: u32::try_from(tasks.min(u64::from(cores))).unwrap_or(cores),
        tasks_per_core,
        threads_per_core,
        warps_per_core: threads_per_core / warp,
        thread_capacity: capacity,
        source: l.source.clone(),
    })
}

impl Split {
    /// "x_axis #1: 16384 tasks of 1 workgroup (256 threads) on 4 of 4 cores, per core 4 tasks,
    /// 1024 threads (64 warps) of 1024 at once".
    pub fn describe(&self) -> String {
        let wg = if self.workgroups_per_task == 1 {
            "workgroup".to_string()
        } else {
            "workgroups".to_string()
        };
        format!(
            "{}_axis #{}: {} task{} of {} {wg} ({} threads) on {} of {} cores, per core {} task{}, {} threads ({} warps) of {} at once",
            self.task_axis,
            self.task_increment,
            self.tasks,
            if self.tasks == 1 { "" } else { "s" },
            self.workgroups_per_task,
            self.threads_per_task,
            self.cores_with_work,
            self.cores,
            self.tasks_per_core,
            if self.tasks_per_core == 1 { "" } else { "s" },
            self.threads_per_core,
            self.warps_per_core,
            self.thread_capacity
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vulkan::info::tests_support::dev;
    use crate::vulkan::ShaderCores;

    fn g610() -> Limits {
        Limits::g610()
    }

    /// What Mesa 26.2 emitted in the lab (scripts/panvk-lab/task-split.sh, docs/panvk-lab.md
    /// "Task split"): (workgroup, grid, registers) -> (axis, increment).
    #[test]
    fn the_26_rule_gives_the_parameters_the_lab_recorded() {
        let l = g610();
        type Case = ([u32; 3], [u32; 3], u32, (usize, u32));
        let cases: [Case; 6] = [
            // vkpeak's 16-invocation workgroups: 16 per task along x.
            ([16, 1, 1], [65536, 1, 1], 8, (0, 16)),
            // a grid smaller than 16 per core: its even share (64 / 4).
            ([16, 1, 1], [64, 1, 1], 8, (0, 16)),
            // rvl's peak loops (256 invocations): one workgroup per task.
            ([256, 1, 1], [16384, 1, 1], 36, (0, 1)),
            // ggml's mali-m (256) and mali-s (64) tiles.
            ([256, 1, 1], [172, 8, 1], 56, (0, 1)),
            ([64, 1, 1], [344, 1, 1], 52, (0, 4)),
            ([64, 1, 1], [8, 1, 1], 52, (0, 2)),
        ];
        for (wg, grid, regs, want) in cases {
            assert_eq!(
                axis_and_increment(Rule::Mesa26, &l, wg, grid, regs),
                want,
                "{wg:?} {grid:?}"
            );
        }
    }

    #[test]
    fn mesa_25_put_every_narrow_workgroup_of_a_dispatch_in_one_task_on_one_core() {
        let l = g610();
        // vkpeak on 25.3: 16 x 16 < 1024, so the loop reached z with an increment of 1.
        let s = split(Rule::Mesa25, &l, [16, 1, 1], [65536, 1, 1], 8).unwrap();
        assert_eq!((s.task_axis, s.task_increment), ('z', 1));
        assert_eq!((s.tasks, s.workgroups_per_task), (1, 65536));
        assert_eq!((s.cores_with_work, s.cores), (1, 4));
        assert_eq!(s.threads_per_core, 2048, "the one core is full");
        // The same dispatch on 26.x: 4096 tasks of 16 workgroups over all 4 cores.
        let s = split(Rule::Mesa26, &l, [16, 1, 1], [65536, 1, 1], 8).unwrap();
        assert_eq!((s.task_axis, s.task_increment, s.tasks), ('x', 16, 4096));
        assert_eq!(s.cores_with_work, 4);
        assert_eq!(
            (s.tasks_per_core, s.threads_per_core, s.warps_per_core),
            (4, 1024, 64)
        );
        assert_eq!(
            s.thread_capacity, 2048,
            "8 registers: a core could hold 2048"
        );
        // 256-invocation workgroups were split across the cores by both rules.
        let s = split(Rule::Mesa25, &l, [256, 1, 1], [16384, 1, 1], 36).unwrap();
        assert_eq!(
            (s.task_axis, s.task_increment, s.tasks, s.cores_with_work),
            ('x', 4, 4096, 4)
        );
        assert_eq!((s.threads_per_core, s.thread_capacity), (1024, 1024));
        // ggml's mali-s tile (64 invocations): 16 per task along x on 25.3, still spread.
        let s = split(Rule::Mesa25, &l, [64, 1, 1], [344, 1, 1], 52).unwrap();
        assert_eq!((s.task_axis, s.task_increment, s.tasks), ('x', 16, 22));
    }

    #[test]
    fn an_increment_larger_than_the_x_extent_moves_to_y_and_covers_whole_rows() {
        let l = g610();
        // 16 per task, 3 workgroups along x: y axis, 16 / 3 = 5 rows of 3.
        let s = split(Rule::Mesa26, &l, [16, 1, 1], [3, 100, 1], 8).unwrap();
        assert_eq!((s.task_axis, s.task_increment), ('y', 5));
        assert_eq!((s.workgroups_per_task, s.tasks), (15, 20));
        assert_eq!(split(Rule::Mesa26, &l, [16, 1, 1], [0, 1, 1], 8), None);
    }

    #[test]
    fn the_device_gives_the_core_mask_and_threads_per_core_and_the_mesa_version_the_rule() {
        let mut d = dev(0, "Mali-G610 MC4", "integrated-gpu", "MESA_PANVK");
        d.subgroup_size = 16;
        d.max_workgroup_invocations = 1024;
        d.shader_cores = Some(ShaderCores {
            core_mask: 0x5,
            core_count: 2,
            warps_per_core: 64,
        });
        let l = Limits::for_device(&d).unwrap();
        assert_eq!(
            (l.core_mask, l.cores(), l.max_threads_per_core),
            (0x5, 2, 2048)
        );
        assert!(l.source.contains("shader_present 0x5"), "{}", l.source);
        d.shader_cores = None;
        assert_eq!(Limits::for_device(&d).unwrap().core_mask, G610_CORE_MASK);
        let nv = dev(0, "H200", "discrete-gpu", "NVIDIA_PROPRIETARY");
        assert_eq!(Limits::for_device(&nv), None);
        assert_eq!(Rule::for_mesa((25, 3)), Rule::Mesa25);
        assert_eq!(Rule::for_mesa((26, 0)), Rule::Mesa26);
        assert_eq!(Rule::for_mesa((26, 2)), Rule::Mesa26);
    }
}
