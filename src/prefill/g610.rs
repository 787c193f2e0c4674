//! What the model's prefill GEMMs would take on a Mali-G610 MC4 at its top clock, from the panvk
//! lab's throughput model of the llama.cpp pipelines that run them: each weight matrix of the
//! GGUF's tensor table at the lab rate of the pipeline its tensor type selects (rvl's Mali
//! matmul pipelines, `patches/llama.cpp`), summed per token. Pure: the tensor table comes from
//! the header rvl already read; nothing runs.
//!
//! The rates are the inner loops' (`scripts/panvk-lab/throughput-report.sh --patched --ggml`,
//! docs/panvk-lab.md "Throughput model"): static, 4 shader cores x 1 GHz, no memory system. So
//! the figure is what the compiled code allows, the ceiling a board's measured pp approaches
//! when the clock, the memory and the dispatches keep up; `smoke-bench --gguf` prints it beside
//! the measured rate.

use serde::{Deserialize, Serialize};

use crate::gguf::Gguf;

/// The shader cores and clock the rates assume (G610 MC4 at its top OPP).
pub const BASIS: &str = "Mali-G610 MC4, 4 cores at 1 GHz, Mesa 26.2's panvk compiler, rvl's Mali matmul pipelines (panvk lab: inner loops only, no memory system)";

/// ggml's tile selection on Mali: the 32x32 tile up to 32 tokens per ubatch, the 64x64 above.
pub const SMALL_TILE_MAX_TOKENS: u32 = 32;
/// Below this many tokens ggml multiplies with its matrix-vector shaders, which the lab does
/// not rate (`mul_mat_vec_max_cols`).
pub const MAT_VEC_MAX_TOKENS: u32 = 8;

/// One ggml tensor type's pipeline on Mali and its lab rates (GFLOP/s at 4 cores x 1 GHz) with
/// the 64x64 tile (ubatch > 32) and the 32x32 tile; for q4_0, q8_0, q4_K and q6_K also the
/// int-dot pipeline's (GOP/s), which a build whose glslc knows GL_EXT_integer_dot_product runs
/// instead.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LabRate {
    pub ggml_type: u32,
    pub type_name: &'static str,
    pub pipeline: &'static str,
    pub medium_gflops: f64,
    pub small_gflops: f64,
    /// `(medium, small)` of [`INT_DOT_PIPELINE`], where the type takes it.
    pub int_dot: Option<(f64, f64)>,
}

/// rvl's int-dot pipeline on Mali (patches/llama.cpp 0011-0018, mul_mmq_mali.comp: q8_1
/// activations, the weight type a specialisation constant).
pub const INT_DOT_PIPELINE: &str = "matmul_mali_q8_1";

/// The lab's rows for rvl's Mali pipelines (docs/panvk-lab.md, "rvl's Mali matmul pipelines":
/// `throughput-report.sh --ggml`, Mesa 26.2.0-rc1's compiler as rvl's series leaves it), with
/// the activations in f32 as llama.cpp gives them. Quantised weights run the dequantising
/// pipeline with fp16 maths (`matmul_mali_quant_f32_f16acc`, one SPIR-V, the type a
/// specialisation constant; q6_K its shared-memory build). Since patches 0016-0017 both
/// pipelines keep their tiles in a storage buffer (Mesa's Valhall backend spends fewer words
/// on a buffer access's address than on a shared-memory one). A build with int-dot shaders
/// runs them on rvl's int-dot pipeline instead (`int_dot`; ggml's own int-dot pipeline is
/// slower on Mali than both).
pub const LAB_RATES: &[LabRate] = &[
    LabRate {
        ggml_type: 0,
        type_name: "f32",
        pipeline: "matmul_mali_f32_f32",
        medium_gflops: 410.0,
        small_gflops: 372.0,
        int_dot: None,
    },
    LabRate {
        ggml_type: 1,
        type_name: "f16",
        pipeline: "matmul_mali_f16_f32_f16acc",
        medium_gflops: 776.0,
        small_gflops: 657.0,
        int_dot: None,
    },
    LabRate {
        ggml_type: 2,
        type_name: "q4_0",
        pipeline: "matmul_mali_quant_f32_f16acc",
        medium_gflops: 731.0,
        small_gflops: 596.0,
        int_dot: Some((1111.0, 1034.0)),
    },
    LabRate {
        ggml_type: 8,
        type_name: "q8_0",
        pipeline: "matmul_mali_quant_f32_f16acc",
        medium_gflops: 741.0,
        small_gflops: 612.0,
        int_dot: Some((1140.0, 1077.0)),
    },
    LabRate {
        ggml_type: 12,
        type_name: "q4_K",
        pipeline: "matmul_mali_quant_f32_f16acc",
        medium_gflops: 713.0,
        small_gflops: 598.0,
        int_dot: Some((1004.0, 967.0)),
    },
    LabRate {
        ggml_type: 14,
        type_name: "q6_K",
        // patch 0017: q6_K keeps its tiles in shared memory, a build of its own
        pipeline: "matmul_mali_quant_f32_shared_f16acc",
        medium_gflops: 451.0,
        small_gflops: 306.0,
        int_dot: Some((892.0, 790.0)),
    },
];

pub fn lab_rate(ggml_type: u32) -> Option<&'static LabRate> {
    LAB_RATES.iter().find(|r| r.ggml_type == ggml_type)
}

/// The prediction, as `--json` prints it under `prefill.g610_prediction`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct G610Prediction {
    /// What the figures assume ([`BASIS`]).
    pub basis: Option<String>,
    /// Whether the figures take the int-dot pipeline for the types that have one: the
    /// llama.cpp build's int-dot shaders, as its stamp says (false when it does not say).
    #[serde(default)]
    pub int_dot_build: bool,
    /// The weight matmuls' work per token, in GFLOP (2 x rows x columns per matrix).
    pub gflop_per_token: Option<f64>,
    /// Per tensor type: how many weight matrices, their share of the work, the pipeline and
    /// its lab rates.
    pub by_type: Vec<TypeShare>,
    /// GEMM-only tokens per second per ubatch of the run (none below 9 tokens: mat-vec).
    pub points: Vec<G610Point>,
    /// Why there is no prediction (a tensor type rvl has no Mali rate for, no weights, ...).
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TypeShare {
    pub ggml_type: String,
    pub matrices: u32,
    pub gflop_per_token: f64,
    pub pipeline: String,
    pub medium_gflops: f64,
    pub small_gflops: f64,
    /// The other path's pipeline and rates (the int-dot one where the build has none, the fp16
    /// one where it has), for the types that have both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other: Option<OtherPath>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OtherPath {
    pub pipeline: String,
    pub medium_gflops: f64,
    pub small_gflops: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct G610Point {
    pub ubatch: u32,
    pub tokens_per_s: f64,
}

/// The weight matrices a prefill multiplies by every token: the 2-D `blk.N.*.weight` tensors
/// (attention and feed-forward projections). Left out: 1-D norms and biases, the token
/// embedding (a row lookup) and the LM head (`output.weight`: llama-bench's pp computes logits
/// for the last token only).
fn is_layer_matmul(name: &str, dims: &[u64]) -> bool {
    name.starts_with("blk.")
        && name.ends_with(".weight")
        && dims.len() == 2
        && dims.iter().all(|&d| d > 1)
}

/// The prediction for the model whose header is `g`, at each of `ubatches`, with the int-dot
/// pipeline for the types that have one when `int_dot_build`.
pub fn predict(g: &Gguf, ubatches: &[u32], int_dot_build: bool) -> G610Prediction {
    let mut by_type: Vec<TypeShare> = Vec::new();
    let mut unknown: Vec<String> = Vec::new();
    for t in g
        .tensors
        .iter()
        .filter(|t| is_layer_matmul(&t.name, &t.dims))
    {
        // dims[0] = K (inputs), dims[1] = M (outputs): 2·K·M FLOP per token.
        let gflop = 2.0 * t.dims[0] as f64 * t.dims[1] as f64 / 1e9;
        match lab_rate(t.ggml_type.0) {
            Some(r) => match by_type.iter_mut().find(|s| s.ggml_type == r.type_name) {
                Some(s) => {
                    s.matrices += 1;
                    s.gflop_per_token += gflop;
                }
                None => {
                    let fp16 = OtherPath {
                        pipeline: r.pipeline.to_string(),
                        medium_gflops: r.medium_gflops,
                        small_gflops: r.small_gflops,
                    };
                    let int_dot = r.int_dot.map(|(medium, small)| OtherPath {
                        pipeline: INT_DOT_PIPELINE.to_string(),
                        medium_gflops: medium,
                        small_gflops: small,
                    });
                    let (used, other) = match int_dot {
                        Some(i) if int_dot_build => (i, Some(fp16)),
                        Some(i) => (fp16, Some(i)),
                        None => (fp16, None),
                    };
                    by_type.push(TypeShare {
                        ggml_type: r.type_name.to_string(),
                        matrices: 1,
                        gflop_per_token: gflop,
                        pipeline: used.pipeline,
                        medium_gflops: used.medium_gflops,
                        small_gflops: used.small_gflops,
                        other,
                    })
                }
            },
            None => {
                let what = format!("{} (ggml type {})", t.name, t.ggml_type.0);
                if !unknown.contains(&what) {
                    unknown.push(what);
                }
            }
        }
    }
    let fail = |e: String| G610Prediction {
        basis: Some(BASIS.to_string()),
        int_dot_build,
        error: Some(e),
        ..Default::default()
    };
    if let Some(first) = unknown.first() {
        return fail(format!(
            "no lab rate for the tensor type of {first}{} (rvl's Mali pipelines cover f32, f16, q4_0, q8_0, q4_K and q6_K)",
            if unknown.len() > 1 {
                format!(" and {} more", unknown.len() - 1)
            } else {
                String::new()
            }
        ));
    }
    if by_type.is_empty() {
        return fail("the tensor table has no layer weight matrices (blk.N.*.weight, 2-D)".into());
    }
    let points = ubatches
        .iter()
        .filter(|&&u| u > MAT_VEC_MAX_TOKENS)
        .map(|&u| {
            let seconds_per_token: f64 = by_type
                .iter()
                .map(|s| {
                    let rate = if u > SMALL_TILE_MAX_TOKENS {
                        s.medium_gflops
                    } else {
                        s.small_gflops
                    };
                    s.gflop_per_token / rate
                })
                .sum();
            G610Point {
                ubatch: u,
                tokens_per_s: 1.0 / seconds_per_token,
            }
        })
        .collect();
    G610Prediction {
        basis: Some(BASIS.to_string()),
        int_dot_build,
        gflop_per_token: Some(by_type.iter().map(|s| s.gflop_per_token).sum()),
        by_type,
        points,
        error: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gguf::write::{self, TensorSpec};
    use crate::gguf::{GgmlType, Value};

    const Q4_K: GgmlType = GgmlType::Q4_K;
    const Q6_K: GgmlType = GgmlType::Q6_K;

    /// llama.cpp's Q4_K_M rule (llama-quant.cpp, `use_more_bits`): attn_v and ffn_down get
    /// q6_K in the first and last eighth of the layers and every third layer between.
    fn use_more_bits(i: u64, n: u64) -> bool {
        i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2
    }

    /// Qwen2.5-3B-Instruct Q4_K_M's tensor table as llama.cpp's quantiser writes it: 36
    /// layers, hidden 2048, FFN 11008, 16 heads of 128 with 2 KV heads (K/V 256 wide), tied
    /// embeddings (no output.weight), q/k/v biases and norms in f32.
    pub fn qwen25_3b_q4_k_m() -> Gguf {
        let (h, f, kv, n) = (2048u64, 11008u64, 256u64, 36u64);
        let mut t = vec![
            TensorSpec::new("token_embd.weight", &[h, 151936], Q6_K),
            TensorSpec::new("output_norm.weight", &[h], GgmlType::F32),
        ];
        for i in 0..n {
            let more = if use_more_bits(i, n) { Q6_K } else { Q4_K };
            let b = |s: &str| format!("blk.{i}.{s}");
            t.extend([
                TensorSpec::new(b("attn_norm.weight"), &[h], GgmlType::F32),
                TensorSpec::new(b("attn_q.weight"), &[h, h], Q4_K),
                TensorSpec::new(b("attn_q.bias"), &[h], GgmlType::F32),
                TensorSpec::new(b("attn_k.weight"), &[h, kv], Q4_K),
                TensorSpec::new(b("attn_k.bias"), &[kv], GgmlType::F32),
                TensorSpec::new(b("attn_v.weight"), &[h, kv], more),
                TensorSpec::new(b("attn_v.bias"), &[kv], GgmlType::F32),
                TensorSpec::new(b("attn_output.weight"), &[h, h], Q4_K),
                TensorSpec::new(b("ffn_norm.weight"), &[h], GgmlType::F32),
                TensorSpec::new(b("ffn_gate.weight"), &[h, f], Q4_K),
                TensorSpec::new(b("ffn_up.weight"), &[h, f], Q4_K),
                TensorSpec::new(b("ffn_down.weight"), &[f, h], more),
            ]);
        }
        let meta = vec![(
            "general.architecture".to_string(),
            Value::String("qwen2".into()),
        )];
        let bytes = write::header(&meta, &t).unwrap().0;
        crate::gguf::read::parse(&bytes, false).unwrap()
    }

    #[test]
    fn qwen25_3b_q4_k_m_is_q4_k_with_q6_k_attn_v_and_ffn_down_in_half_the_layers() {
        let p = predict(&qwen25_3b_q4_k_m(), &[512], false);
        assert_eq!(p.error, None);
        let q4 = p.by_type.iter().find(|s| s.ggml_type == "q4_K").unwrap();
        let q6 = p.by_type.iter().find(|s| s.ggml_type == "q6_K").unwrap();
        assert_eq!((q4.matrices, q6.matrices), (36 * 7 - 36, 36));
        // 18 of 36 layers take q6_K for attn_v and ffn_down
        let per_layer = |k: u64, m: u64| 2.0 * (k * m) as f64 / 1e9;
        let q6_gflop = 18.0 * (per_layer(2048, 256) + per_layer(11008, 2048));
        assert!((q6.gflop_per_token - q6_gflop).abs() < 1e-9);
        // the linear layers: 2 x 3.09 G parameters less the embedding
        let total = p.gflop_per_token.unwrap();
        assert!((total - 5.55).abs() < 0.01, "{total}");
        // GEMM-only pp at ubatch 512 with the lab's q4_K and q6_K rates (docs/panvk-lab.md)
        let pp = p.points[0].tokens_per_s;
        assert!((pp - 118.2).abs() < 0.1, "{pp}");
        assert_eq!(q4.pipeline, "matmul_mali_quant_f32_f16acc");
        assert_eq!(q4.other.as_ref().unwrap().pipeline, INT_DOT_PIPELINE);
    }

    #[test]
    fn an_int_dot_build_takes_the_int_dot_rates_for_q4_k_and_q6_k() {
        let p = predict(&qwen25_3b_q4_k_m(), &[512], true);
        assert!(p.int_dot_build);
        for (name, rate, fp16) in [
            ("q4_K", 1004.0, "matmul_mali_quant_f32_f16acc"),
            ("q6_K", 892.0, "matmul_mali_quant_f32_shared_f16acc"),
        ] {
            let t = p.by_type.iter().find(|s| s.ggml_type == name).unwrap();
            assert_eq!(
                (t.pipeline.as_str(), t.medium_gflops),
                (INT_DOT_PIPELINE, rate)
            );
            assert_eq!(t.other.as_ref().unwrap().pipeline, fp16);
        }
        // q4_K 4.72 GFLOP a token at 1004, q6_K 0.83 at 892
        let pp = p.points[0].tokens_per_s;
        assert!((pp - 177.6).abs() < 0.1, "{pp}");
    }

    #[test]
    fn the_rate_per_token_is_the_work_over_each_types_lab_rate_by_tile() {
        let g = qwen25_3b_q4_k_m();
        let p = predict(&g, &[4, 16, 512], false);
        assert_eq!(
            p.points.iter().map(|x| x.ubatch).collect::<Vec<_>>(),
            [16, 512]
        );
        let expect = |small: bool| {
            1.0 / p
                .by_type
                .iter()
                .map(|s| {
                    s.gflop_per_token
                        / if small {
                            s.small_gflops
                        } else {
                            s.medium_gflops
                        }
                })
                .sum::<f64>()
        };
        assert!((p.points[0].tokens_per_s - expect(true)).abs() < 1e-9);
        assert!((p.points[1].tokens_per_s - expect(false)).abs() < 1e-9);
    }

    #[test]
    fn a_type_without_a_mali_rate_or_no_weights_say_why() {
        let meta = vec![(
            "general.architecture".to_string(),
            Value::String("llama".into()),
        )];
        let t = vec![
            TensorSpec::new("blk.0.attn_q.weight", &[64, 64], GgmlType::BF16),
            TensorSpec::new("blk.0.attn_k.weight", &[64, 64], GgmlType::BF16),
        ];
        let g = crate::gguf::read::parse(&write::header(&meta, &t).unwrap().0, false).unwrap();
        let e = predict(&g, &[512], false).error.unwrap();
        assert!(
            e.contains("blk.0.attn_q.weight (ggml type 30) and 1 more"),
            "{e}"
        );
        let none = vec![TensorSpec::new(
            "blk.0.attn_norm.weight",
            &[64],
            GgmlType::F32,
        )];
        let g = crate::gguf::read::parse(&write::header(&meta, &none).unwrap().0, false).unwrap();
        assert!(predict(&g, &[512], true)
            .error
            .unwrap()
            .contains("no layer weight"));
    }
}
