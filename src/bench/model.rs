//! The prefill workload: model presets and the GEMMs one transformer layer runs per ubatch.
//! Only the linear layers are modelled (attention scores, softmax, norms, RoPE and the LM head
//! are not), which is where almost all prefill FLOPs go for short and medium prompts.

use serde::Serialize;

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Model {
    pub name: &'static str,
    pub hidden: u32,
    pub ffn: u32,
    pub layers: u32,
    pub heads: u32,
    pub kv_heads: u32,
}

pub const PRESETS: &[Model] = &[
    // A toy shape for checking the bench itself in seconds (CI runs it on lavapipe).
    Model {
        name: "tiny",
        hidden: 64,
        ffn: 160,
        layers: 2,
        heads: 4,
        kv_heads: 2,
    },
    Model {
        name: "qwen2.5-1.5b",
        hidden: 1536,
        ffn: 8960,
        layers: 28,
        heads: 12,
        kv_heads: 2,
    },
    Model {
        name: "qwen2.5-3b",
        hidden: 2048,
        ffn: 11008,
        layers: 36,
        heads: 16,
        kv_heads: 2,
    },
    Model {
        name: "qwen2.5-7b",
        hidden: 3584,
        ffn: 18944,
        layers: 28,
        heads: 28,
        kv_heads: 4,
    },
    Model {
        name: "llama3.1-8b",
        hidden: 4096,
        ffn: 14336,
        layers: 32,
        heads: 32,
        kv_heads: 8,
    },
];

pub fn preset(name: &str) -> Result<&'static Model, String> {
    PRESETS
        .iter()
        .find(|m| m.name.eq_ignore_ascii_case(name))
        .ok_or_else(|| {
            format!(
                "unknown model preset {name:?}; known: {}",
                PRESETS
                    .iter()
                    .map(|m| m.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
}

/// One matrix product of a layer: `tokens x k` activations times `n x k` weights.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq, Hash)]
pub struct Gemm {
    pub name: &'static str,
    /// Reduction length (input features).
    pub k: u32,
    /// Output features.
    pub n: u32,
}

impl Gemm {
    pub fn flops(&self, tokens: u32) -> f64 {
        2.0 * f64::from(tokens) * f64::from(self.k) * f64::from(self.n)
    }
    /// Shape label used in tables, `K x N` like llama.cpp's weight shapes.
    pub fn shape(&self) -> String {
        format!("{}x{}", self.k, self.n)
    }
}

impl Model {
    pub fn head_dim(&self) -> u32 {
        self.hidden / self.heads
    }

    /// The GEMMs of one layer in execution order: fused QKV projection, attention output,
    /// FFN gate and up, FFN down.
    pub fn layer(&self) -> [Gemm; 5] {
        let kv = 2 * self.kv_heads * self.head_dim();
        [
            Gemm {
                name: "qkv",
                k: self.hidden,
                n: self.hidden + kv,
            },
            Gemm {
                name: "o",
                k: self.hidden,
                n: self.hidden,
            },
            Gemm {
                name: "gate",
                k: self.hidden,
                n: self.ffn,
            },
            Gemm {
                name: "up",
                k: self.hidden,
                n: self.ffn,
            },
            Gemm {
                name: "down",
                k: self.ffn,
                n: self.hidden,
            },
        ]
    }

    /// Linear-layer FLOPs per token over all layers (2 x parameters of the modelled GEMMs).
    pub fn flops_per_token(&self) -> f64 {
        self.layer().iter().map(|g| g.flops(1)).sum::<f64>() * f64::from(self.layers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qwen3b_layer_matches_the_published_shapes() {
        let m = preset("Qwen2.5-3B").unwrap();
        let shapes: Vec<(u32, u32)> = m.layer().iter().map(|g| (g.k, g.n)).collect();
        assert_eq!(
            shapes,
            vec![
                (2048, 2560),
                (2048, 2048),
                (2048, 11008),
                (2048, 11008),
                (11008, 2048)
            ]
        );
        // 2.775e9 linear parameters -> 5.55 GFLOP per token (research/perf-anchors.md §5.1).
        let gflop = m.flops_per_token() / 1e9;
        assert!((gflop - 5.55).abs() < 0.01, "{gflop}");
    }

    #[test]
    fn cli_help_names_every_preset() {
        let mut cmd = <crate::cli::Cli as clap::CommandFactory>::command();
        let help = cmd
            .find_subcommand_mut("smoke-bench")
            .expect("smoke-bench verb")
            .render_long_help()
            .to_string();
        for m in PRESETS {
            assert!(help.contains(m.name), "--model help lacks {}", m.name);
        }
    }

    #[test]
    fn unknown_preset_lists_the_known_ones() {
        let err = preset("gpt-5").unwrap_err();
        assert!(
            err.contains("qwen2.5-3b") && err.contains("qwen2.5-7b"),
            "{err}"
        );
    }
}
