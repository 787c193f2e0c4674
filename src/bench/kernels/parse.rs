//! Kernels by name: extra tile shapes from `RVL_BENCH_TILES`, the kernels outside the GEMM
//! family (`fixed`), and the catalogue look-up (`find`).

use super::grid::MAX_SPLIT_K;
use super::{catalogue, Family, KernelSpec, Precision};

/// Extra shared-memory tile shapes to try, for tuning on a new GPU without a rebuild:
/// `RVL_BENCH_TILES=BMxBNxBKxTMxTN[xSPLIT][p][,...]` (e.g. `128x128x16x8x8`, `128x64x16x8x8x2`,
/// `128x128x8x8x8p`). Each must keep the tiled kernel's contract (see gemm_tiled.comp);
/// SPLIT > 1 is split-K, a trailing `p` the peeled loop.
pub const TILES_ENV: &str = "RVL_BENCH_TILES";

pub fn parse_tiles(spec: &str) -> Result<Vec<KernelSpec>, String> {
    let mut out = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let shape_error = || {
            format!(
                "{TILES_ENV}: {item:?} is not BMxBNxBKxTMxTN[xSPLIT][p] (five or six numbers, \
                 p for the peeled loop)"
            )
        };
        let (dims, peeled) = match item.strip_suffix('p') {
            Some(dims) => (dims, true),
            None => (item, false),
        };
        let nums: Vec<u32> = dims
            .split('x')
            .map(|v| v.parse::<u32>())
            .collect::<Result<_, _>>()
            .map_err(|_| shape_error())?;
        let (bm, bn, bk, tm, tn, split) = match nums[..] {
            [bm, bn, bk, tm, tn] => (bm, bn, bk, tm, tn, 1),
            [bm, bn, bk, tm, tn, split] => (bm, bn, bk, tm, tn, split),
            _ => return Err(shape_error()),
        };
        if [bm, bn, bk, tm, tn, split].contains(&0) || tm > bm || tn > bn || split > MAX_SPLIT_K {
            return Err(format!(
                "{TILES_ENV}: {item:?}: sizes must be positive, TM <= BM, TN <= BN, SPLIT <= {MAX_SPLIT_K}"
            ));
        }
        if peeled && split > 1 {
            return Err(format!(
                "{TILES_ENV}: {item:?}: the peeled loop has no split-K build; drop the split or the p"
            ));
        }
        let base = format!("tiled-{bm}x{bn}-k{bk}-{tm}x{tn}");
        let dims = [bm, bn, bk, tm, tn];
        let k = if peeled {
            KernelSpec::tiled_peeled(&format!("{base}-peeled"), dims)
        } else if split > 1 {
            KernelSpec::tiled_split(&format!("{base}-split{split}"), dims, split)
        } else {
            KernelSpec::tiled_split(&base, dims, 1)
        };
        if !k.contract_holds() || k.invocations() > 1024 {
            return Err(format!(
                "{TILES_ENV}: {item:?} breaks the tiled kernel's contract: TM, TN, BK multiples of 4, \
                 (BM/TM)*(BN/TN) <= 1024 invocations dividing BM*BK/4 and BN*BK/4"
            ));
        }
        out.push(k);
    }
    Ok(out)
}

/// A kernel outside the GEMM family (peak loop, probe): one spec constant, fixed grid.
pub fn fixed(
    name: &str,
    precision: Precision,
    spirv: &'static [u8],
    spec: Vec<u32>,
    local: u32,
    groups: u32,
) -> KernelSpec {
    KernelSpec {
        name: name.to_string(),
        precision,
        family: Family::Reg,
        spirv,
        spec,
        local: (local, 1),
        tile_m: 1,
        tile_n: 1,
        shared_bytes: 0,
        accumulators: 0,
        llama_like: false,
        fixed_grid: Some((groups, 1)),
        split_k: 1,
        split_from_cus: false,
    }
}

pub fn find(name: &str, precision: Precision) -> Option<KernelSpec> {
    catalogue()
        .into_iter()
        .find(|k| k.name == name && k.precision == precision)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::kernels::spirv::{GEMM_TILED_PEELED_F32, GEMM_TILED_SPLITK_F32};

    #[test]
    fn extra_tiles_parse_and_are_checked() {
        let t = parse_tiles("128x128x16x8x8, 64x64x16x4x4").unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].name, "tiled-128x128-k16-8x8");
        assert_eq!(t[0].invocations(), 256);
        assert!(parse_tiles("128x128x16x8")
            .unwrap_err()
            .contains("five or six numbers"));
        assert!(parse_tiles("128x128x6x8x8")
            .unwrap_err()
            .contains("contract"));
        assert!(parse_tiles("4x4x4x8x8").unwrap_err().contains("TM <= BM"));
        // Split-K and the peeled loop: a sixth number, a trailing p; not both.
        let t = parse_tiles("128x64x16x8x8x2,128x128x8x8x8p").unwrap();
        assert_eq!(t[0].name, "tiled-128x64-k16-8x8-split2");
        assert_eq!(t[0].split_k, 2);
        assert!(std::ptr::eq(t[0].spirv, GEMM_TILED_SPLITK_F32));
        assert_eq!(t[1].name, "tiled-128x128-k8-8x8-peeled");
        assert!(std::ptr::eq(t[1].spirv, GEMM_TILED_PEELED_F32));
        assert_eq!(t[1].split_k, 1);
        assert!(parse_tiles("128x64x16x8x8x2p")
            .unwrap_err()
            .contains("no split-K build"));
        assert!(parse_tiles("128x64x16x8x8x0")
            .unwrap_err()
            .contains("SPLIT <="));
        assert!(parse_tiles("128x64x16x8x8x17")
            .unwrap_err()
            .contains("SPLIT <="));
    }
}
