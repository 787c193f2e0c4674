//! Recording and timing GEMM dispatches on the device: one kernel alone (to check it and time
//! it), and the layer stack recorded the way llama.cpp's Vulkan backend submits a prefill graph
//! (many dispatches per command buffer, a barrier between dependent dispatches, several command
//! buffers recorded and alive before they are submitted one `vkQueueSubmit` each).

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;
use std::time::Instant;

use super::inject::Injector;
use super::kernels::KernelSpec;
use crate::vulkan::{
    one_shot, Buffer, BufferHandle, CommandBuffers, DescriptorSet, Dispatch, Gpu, Layouts,
    Pipeline, PipelineHandle, QueryPool, Recording, VkError,
};

/// A GEMM bound to device buffers.
#[derive(Debug, Clone, Copy)]
pub struct Bound {
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub ldk: u32,
    pub set: DescriptorSet,
    /// The output buffer (binding 2), cleared before a split-K kernel adds into it.
    pub out: Option<BufferHandle>,
}

/// Times of a stack run: per dispatch (all reps), and the whole stack per rep, in seconds.
#[derive(Debug, Clone, Default)]
pub struct StackTiming {
    pub per_dispatch: Vec<Vec<f64>>,
    pub total: Vec<f64>,
    pub command_buffers: usize,
    /// True when the device's timestamp queries were used, false for wall clock.
    pub timestamps: bool,
}

pub struct Runner<'g> {
    pub gpu: &'g Gpu,
    pub layouts: Layouts,
    pipelines: HashMap<String, Pipeline>,
    queries: Option<QueryPool>,
}

/// One layer-stack run, as [`Runner::run_stack`] records and submits it: the dispatches in
/// order, their pipelines, how they split into command buffers, and how often to submit.
struct StackJob<'a> {
    items: &'a [(&'a KernelSpec, Bound)],
    pipes: Vec<PipelineHandle>,
    /// Dispatch ranges, one command buffer each.
    chunks: Vec<Range<usize>>,
    timestamps: bool,
    warmup: usize,
    reps: usize,
    /// Where failure injection looks (the ubatch the stack runs at).
    ubatch: u32,
    inject: &'a Injector,
}

impl StackJob<'_> {
    /// Timestamps: one before each command buffer's dispatches and one after each dispatch.
    fn queries(&self) -> u32 {
        (self.items.len() + self.chunks.len()) as u32
    }
}

/// One pipeline per SPIR-V and set of spec constants: a "-splitcu" variant keeps its name
/// across shapes but builds a pipeline per split it resolves to (see KernelSpec::for_shape).
fn key(spec: &KernelSpec) -> String {
    format!(
        "{}/{}/{:p}/{:?}",
        spec.precision.name(),
        spec.name,
        spec.spirv.as_ptr(),
        spec.spec
    )
}

impl<'g> Runner<'g> {
    pub fn new(gpu: &'g Gpu) -> Result<Runner<'g>, VkError> {
        Ok(Runner {
            gpu,
            layouts: Layouts::new(gpu, 4096)?,
            pipelines: HashMap::new(),
            queries: None,
        })
    }

    /// The kernel as built and dispatched on this bound shape: a "-splitcu" variant gets the
    /// split this device's compute units need for it.
    fn for_shape<'s>(&self, spec: &'s KernelSpec, g: &Bound) -> Cow<'s, KernelSpec> {
        spec.for_shape(g.m, g.n, g.ldk, self.gpu.info.compute_units)
    }

    pub fn timestamps(&self) -> bool {
        self.gpu.info.timestamp_period_ns.is_some()
    }

    /// Build (once) and return the pipeline for a kernel variant.
    pub fn pipeline(&mut self, spec: &KernelSpec) -> Result<&Pipeline, VkError> {
        let k = key(spec);
        if !self.pipelines.contains_key(&k) {
            let p = Pipeline::new(self.gpu, &self.layouts, spec.spirv, &spec.spec)?;
            self.pipelines.insert(k.clone(), p);
        }
        Ok(&self.pipelines[&k])
    }

    pub fn bind(
        &self,
        buffers: &[&Buffer],
        m: u32,
        n: u32,
        k: u32,
        ldk: u32,
    ) -> Result<Bound, VkError> {
        Ok(Bound {
            m,
            n,
            k,
            ldk,
            set: self.layouts.bind(buffers)?,
            out: buffers.get(2).map(|b| b.handle()),
        })
    }

    /// A timestamp pool of at least `count` queries (the old one is unused: every submission
    /// is waited for).
    fn ensure_queries(&mut self, count: u32) -> Result<(), VkError> {
        if self.queries.as_ref().is_some_and(|q| q.capacity() >= count) {
            return Ok(());
        }
        self.queries = None;
        self.queries = Some(QueryPool::timestamps(
            self.gpu,
            count.next_power_of_two().max(64),
        )?);
        Ok(())
    }

    /// The pool [`Runner::ensure_queries`] made.
    fn query_pool(&self) -> &QueryPool {
        self.queries
            .as_ref()
            .expect("ensure_queries runs before any timestamp is recorded")
    }

    fn read_queries(&self, count: u32) -> Result<Vec<u64>, VkError> {
        self.query_pool().read(count)
    }

    fn ticks_to_s(&self, ticks: u64) -> f64 {
        let period = f64::from(self.gpu.info.tick_ns().unwrap_or(1.0));
        ticks as f64 * period * 1e-9
    }

    /// The dispatch of `spec` on `g`, after clearing the output of a split-K kernel (which
    /// adds its partial sums into it; the clear counts in the kernel's time).
    fn record_dispatch(
        &self,
        rec: &mut Recording,
        pipe: PipelineHandle,
        spec: &KernelSpec,
        g: &Bound,
    ) {
        let (gx, gy) = spec.grid(g.m, g.n);
        if spec.split_k > 1 {
            let out = g
                .out
                .expect("a split-K kernel is bound with an output buffer");
            rec.zero(out);
        }
        let dispatch = Dispatch {
            pipeline: pipe,
            set: g.set,
            push: Some([g.m, g.n, g.k, g.ldk]),
            groups: [gx, gy, spec.split_k],
        };
        rec.dispatch(&self.layouts, &dispatch);
    }

    /// Run one GEMM alone: once to size a warm-up, then `warm-up + reps` times in one command
    /// buffer, and return the `reps` timed durations. The warm-up keeps the device busy for
    /// [`WARM_S`] first, because a GPU that idled during the host's checks drops its clock
    /// (an H200 falls to 345 MHz) and a millisecond kernel would be timed on the way back up.
    pub fn time_single(
        &mut self,
        spec: &KernelSpec,
        g: &Bound,
        reps: usize,
    ) -> Result<Vec<f64>, VkError> {
        let shaped = self.for_shape(spec, g);
        let spec = shaped.as_ref();
        let pipe = self.pipeline(spec)?.handle();
        if self.timestamps() {
            let probe = self.timed_dispatches(pipe, spec, g, 0, 1)?[0];
            if reps == 0 {
                return Ok(Vec::new());
            }
            let warm = warmup_runs(probe);
            self.timed_dispatches(pipe, spec, g, warm, reps)
        } else {
            let mut times = Vec::with_capacity(reps);
            for r in 0..=reps {
                let start = Instant::now();
                one_shot(self.gpu, |rec| self.record_dispatch(rec, pipe, spec, g))?;
                if r > 0 {
                    times.push(start.elapsed().as_secs_f64());
                }
            }
            Ok(times)
        }
    }

    /// Time several kernels back to back in one command buffer, `reps` runs each, after
    /// `warm` untimed runs of the first: no host work between them, so every kernel meets the
    /// device in the same state (on an H200, kernels timed between host-side checks came out
    /// up to 5x slower than the same kernels inside a busy stream).
    pub fn time_many(
        &mut self,
        items: &[(&KernelSpec, Bound)],
        warm: usize,
        reps: usize,
    ) -> Result<Vec<Vec<f64>>, VkError> {
        if items.is_empty() || reps == 0 {
            return Ok(vec![Vec::new(); items.len()]);
        }
        let shaped: Vec<KernelSpec> = items
            .iter()
            .map(|(spec, g)| self.for_shape(spec, g).into_owned())
            .collect();
        let mut batch = Vec::with_capacity(items.len());
        for (spec, (_, g)) in shaped.iter().zip(items) {
            batch.push((self.pipeline(spec)?.handle(), spec, *g));
        }
        self.time_pipelines(&batch, warm, reps)
    }

    /// One command buffer: `warm` untimed dispatches, then `n` timed ones.
    fn timed_dispatches(
        &mut self,
        pipe: PipelineHandle,
        spec: &KernelSpec,
        g: &Bound,
        warm: usize,
        n: usize,
    ) -> Result<Vec<f64>, VkError> {
        Ok(self
            .time_pipelines(&[(pipe, spec, *g)], warm, n)?
            .pop()
            .unwrap_or_default())
    }

    /// The recording both timing entry points share: `warm` untimed runs of the first item, then
    /// `reps` timed runs of each item in order, a timestamp after every dispatch.
    fn time_pipelines(
        &mut self,
        items: &[(PipelineHandle, &KernelSpec, Bound)],
        warm: usize,
        reps: usize,
    ) -> Result<Vec<Vec<f64>>, VkError> {
        let n = (items.len() * reps) as u32;
        self.ensure_queries(n + 1)?;
        let pool = self.query_pool();
        one_shot(self.gpu, |rec| {
            rec.reset_queries(pool, 0, n + 1);
            for _ in 0..warm {
                let (pipe, spec, g) = &items[0];
                self.record_dispatch(rec, *pipe, spec, g);
                rec.compute_barrier();
            }
            rec.timestamp(pool, 0);
            let mut q = 1;
            for (pipe, spec, g) in items {
                for _ in 0..reps {
                    self.record_dispatch(rec, *pipe, spec, g);
                    rec.compute_barrier();
                    rec.timestamp(pool, q);
                    q += 1;
                }
            }
        })?;
        let ts = self.read_queries(n + 1)?;
        Ok((0..items.len())
            .map(|i| {
                (0..reps)
                    .map(|r| {
                        let at = i * reps + r;
                        self.ticks_to_s(ts[at + 1].saturating_sub(ts[at]))
                    })
                    .collect()
            })
            .collect())
    }

    /// Record `items` (in order) into command buffers of `per_cb` dispatches, all of them before
    /// the first submission, then submit them `warmup + reps` times and time the last `reps`.
    pub fn run_stack(
        &mut self,
        items: &[(&KernelSpec, Bound)],
        per_cb: usize,
        warmup: usize,
        reps: usize,
        ubatch: u32,
        inject: &Injector,
    ) -> Result<StackTiming, VkError> {
        let shaped: Vec<Cow<KernelSpec>> = items
            .iter()
            .map(|(spec, g)| self.for_shape(spec, g))
            .collect();
        let items: Vec<(&KernelSpec, Bound)> = shaped
            .iter()
            .zip(items)
            .map(|(spec, (_, g))| (spec.as_ref(), *g))
            .collect();
        let items = items.as_slice();
        let mut pipes = Vec::with_capacity(items.len());
        for (spec, _) in items {
            pipes.push(self.pipeline(spec)?.handle());
        }
        let job = StackJob {
            items,
            pipes,
            chunks: (0..items.len())
                .step_by(per_cb.max(1))
                .map(|s| s..(s + per_cb.max(1)).min(items.len()))
                .collect(),
            timestamps: self.timestamps(),
            warmup,
            reps,
            ubatch,
            inject,
        };
        if job.timestamps {
            self.ensure_queries(job.queries())?;
        }
        // Freed when dropped, after the queue is idle, whatever happened.
        let cbs = CommandBuffers::allocate(self.gpu, job.chunks.len())?;
        self.record_stack(&job, &cbs)?;
        self.submit_stack(&job, &cbs)
    }

    /// Record every command buffer of the stack (each ended before the first submission).
    fn record_stack(&self, job: &StackJob, cbs: &CommandBuffers) -> Result<(), VkError> {
        for (ci, range) in job.chunks.iter().enumerate() {
            job.inject.check(job.ubatch, "vkBeginCommandBuffer")?;
            let mut rec = cbs.begin(ci)?;
            let first_query = (range.start + ci) as u32;
            if job.timestamps {
                let pool = self.query_pool();
                rec.reset_queries(pool, first_query, range.len() as u32 + 1);
                rec.timestamp(pool, first_query);
            }
            for (j, i) in range.clone().enumerate() {
                let (spec, g) = &job.items[i];
                self.record_dispatch(&mut rec, job.pipes[i], spec, g);
                rec.compute_barrier();
                if job.timestamps {
                    rec.timestamp(self.query_pool(), first_query + j as u32 + 1);
                }
            }
            job.inject.check(job.ubatch, "vkEndCommandBuffer")?;
            rec.end()?;
        }
        Ok(())
    }

    /// Submit the recorded stack `warmup + reps` times and time the last `reps`.
    fn submit_stack(&self, job: &StackJob, cbs: &CommandBuffers) -> Result<StackTiming, VkError> {
        let mut timing = StackTiming {
            per_dispatch: vec![Vec::new(); job.items.len()],
            total: Vec::new(),
            command_buffers: cbs.len(),
            timestamps: job.timestamps,
        };
        for rep in 0..job.warmup + job.reps {
            job.inject.check(job.ubatch, "vkQueueSubmit")?;
            let start = Instant::now();
            cbs.submit_and_wait()?;
            let wall = start.elapsed().as_secs_f64();
            job.inject.check(job.ubatch, "vkWaitForFences")?;
            if rep < job.warmup {
                continue;
            }
            if !job.timestamps {
                timing.total.push(wall);
                continue;
            }
            let ts = self.read_queries(job.queries())?;
            let mut total = 0.0;
            for (ci, range) in job.chunks.iter().enumerate() {
                let base = range.start + ci;
                for (j, i) in range.clone().enumerate() {
                    let dt = self.ticks_to_s(ts[base + j + 1].saturating_sub(ts[base + j]));
                    timing.per_dispatch[i].push(dt);
                }
                total += self.ticks_to_s(ts[base + range.len()].saturating_sub(ts[base]));
            }
            timing.total.push(total);
        }
        Ok(timing)
    }
}

impl Drop for Runner<'_> {
    fn drop(&mut self) {
        // Nothing may be pending when the pipelines and the query pool go.
        let _ = self.gpu.wait_idle();
        self.pipelines.clear();
        self.queries = None;
    }
}

/// Busy time before anything is timed (see [`Runner::time_single`]).
pub const WARM_S: f64 = 0.05;

/// Untimed runs of a job that takes `once` seconds needed to keep the device busy for
/// [`WARM_S`]; none when one run is already that long (the run that measured it warmed up).
pub fn warmup_runs(once: f64) -> usize {
    if once >= WARM_S {
        0
    } else {
        ((WARM_S / once.max(1e-6)).ceil() as usize).min(1000)
    }
}

pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 0 {
        (v[mid - 1] + v[mid]) / 2.0
    } else {
        v[mid]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warmup_fills_the_warm_time_and_is_bounded() {
        assert_eq!(warmup_runs(0.2), 0);
        assert_eq!(warmup_runs(0.01), 5);
        assert_eq!(warmup_runs(0.0), 1000);
    }

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }
}
