"""The planner against real torch, transformers, peft and DeepSpeed, run in a throwaway venv (marked slow).

- parameter counts of tiny configs of every family the counter knows equal what transformers builds;
- predicted weight + gradient + optimizer bytes (fp32, no ZeRO) equal what torch allocated after one AdamW step,
  for a full fine-tune and for LoRA on all linear layers;
- every DeepSpeed config the planner writes (each ZeRO stage and offload, bf16 on an A100 and fp16 on a V100, and
  the plan of a LLaMA-Factory YAML) is accepted by transformers' HfTrainerDeepSpeedConfig with matching
  TrainingArguments (no "values that mismatch TrainingArguments"), and the filled config then loads with
  DeepSpeed's own DeepSpeedConfig; a hard-coded config that disagrees with TrainingArguments is refused.
The venv is built once from pinned releases and cached under ~/.cache/envcheck-tests (outside the repository, so
`pytest --cache-clear` in a concurrent run cannot break it; a change of pins rebuilds it). Building it needs the
package index: without one (and without a cached venv) the tests skip with the reason, as where it cannot be built.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import require_index

from envcheck import cli
from envcheck.plan.gpu import gpu_memory
from envcheck.plan.params import load_config
from envcheck.plan.setup import Setup

pytestmark = pytest.mark.slow
PROBE = Path(__file__).parent / "assets" / "plan" / "torch_probe.py"
ASSET_YAML = {"yaml-lora": Path(__file__).parent / "assets" / "plan" / "llama3_lora_sft.yaml",
              "yaml-full-z3": Path(__file__).parent / "assets" / "plan" / "qwen3_full_sft.yaml"}

TORCH = "torch==2.13.0"  # a CPU wheel; a newer unpinned torch may pull a multi-GB CUDA build
# Pinned, so the venv (and what these tests measure) does not change with what the index serves today.
STEPS = ((TORCH,), ("peft==0.21.2", "transformers==5.24.0"), ("setuptools==84.2.1", "wheel==0.48.0"),
         ("--no-build-isolation", "deepspeed==0.19.8"))

_BASE = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 2, "vocab_size": 500, "max_position_embeddings": 128}
TINY = {
    "llama": {"model_type": "llama", "tie_word_embeddings": False},
    "qwen2": {"model_type": "qwen2", "tie_word_embeddings": True},
    "qwen3": {"model_type": "qwen3", "head_dim": 32, "tie_word_embeddings": False},
    "gemma2": {"model_type": "gemma2", "head_dim": 16},
    "mixtral": {"model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": 2},
    "qwen2_moe": {"model_type": "qwen2_moe", "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
                  "shared_expert_intermediate_size": 48, "decoder_sparse_step": 1},
    "deepseek_v2": {"model_type": "deepseek_v2", "n_routed_experts": 4, "n_shared_experts": 1,
                    "num_experts_per_tok": 2, "moe_intermediate_size": 32, "first_k_dense_replace": 1,
                    "kv_lora_rank": 16, "q_lora_rank": None, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8,
                    "v_head_dim": 16, "num_key_value_heads": 4},
}
# Fused expert tensors (transformers 5) are adapted differently by each peft release: LoRA is compared on dense ones.
DENSE = ("llama", "qwen2", "qwen3", "gemma2")
DS_CHOICES = [("0", "none"), ("1", "optimizer"), ("2", "none"), ("2", "optimizer"), ("3", "none"),
              ("3", "optimizer"), ("3", "all")]
DS_GPUS = {"bf16": "A100 80GB", "fp16": "V100 32GB"}  # the GPU decides the precision (compute capability)
DS_CASES = [f"{z}/{o}/{p}" for z, o in DS_CHOICES for p in DS_GPUS] + ["yaml-lora", "yaml-full-z3"]


def _pip(python: Path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *args],
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def probe_python(request: pytest.FixtureRequest) -> Path:
    """A venv with torch, peft (and transformers) and DeepSpeed, built once under ~/.cache/envcheck-tests."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    root = cache / "envcheck-tests" / f"plan-venv-py{sys.version_info[0]}{sys.version_info[1]}"
    python = root / "bin" / "python"
    ready = root / "envcheck-ready"
    pins = json.dumps(STEPS) + "\n"
    if ready.exists() and ready.read_text() == pins and (root / "pyvenv.cfg").exists():
        check = subprocess.run([str(python), "-c", "import torch, peft, deepspeed"], capture_output=True, timeout=120)
        if check.returncode == 0:
            return python
    require_index()
    root.parent.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(root)], check=True, capture_output=True, timeout=120)
        for step in STEPS:
            result = _pip(python, *step)
            if result.returncode:
                pytest.skip(f"cannot install {' '.join(step)} into a test venv: {result.stderr.strip()[-300:]}")
    except (OSError, subprocess.SubprocessError) as error:
        pytest.skip(f"cannot build a test venv: {error}")
    ready.write_text(pins)
    return python


@pytest.fixture(scope="session")
def probed(probe_python: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:  # type: ignore[type-arg]
    work = tmp_path_factory.mktemp("plan-probe")
    request: dict = {"models": {}, "deepspeed": {}, "lora_rank": 8}  # type: ignore[type-arg]
    for name, extra in TINY.items():
        folder = work / name
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps({**_BASE, **extra}))
        request["models"][name] = str(folder)
    for case in DS_CASES:
        target = work / f"ds_{case.replace('/', '_')}.json"
        if case.startswith("yaml"):
            source = ASSET_YAML[case]
            args = [str(source), "--gpus", "2", "--gpu", "A100 80GB", "--host-mem", "4096"]
        else:
            zero, offload, precision = case.split("/")
            args = ["7B", "--method", "full", "--gpus", "1", "--gpu", DS_GPUS[precision], "--host-mem", "4096",
                    "--zero", zero, "--offload", offload, "--batch", "2", "--grad-accum", "4"]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = cli.main(["plan", *args, "--emit-ds-config", str(target), "--force", "--json"])
        assert code in (0, 1) and target.exists()
        plan = json.loads(out.getvalue())["config"]  # the TrainingArguments the plan is of
        training = {"micro_batch": plan["micro_batch"], "grad_accum": plan["grad_accum"],
                    "precision": plan["precision"]}
        request["deepspeed"][case] = {"path": str(target), "training": training}
    hard_coded = work / "hard_coded.json"  # what the planner used to write: fixed values that disagree
    hard_coded.write_text(json.dumps({"train_batch_size": 4, "train_micro_batch_size_per_gpu": 1,
                                      "gradient_accumulation_steps": 4, "zero_optimization": {"stage": 2}}))
    request["deepspeed"]["hard-coded"] = {"path": str(hard_coded),
                                          "training": {"micro_batch": 2, "grad_accum": 4, "precision": "bf16"}}
    (work / "request.json").write_text(json.dumps(request))
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "TRANSFORMERS_VERBOSITY": "error"}
    result = subprocess.run([str(probe_python), str(PROBE), str(work / "request.json")], capture_output=True,
                            text=True, timeout=600, env=env, cwd=work)
    assert result.returncode == 0, result.stderr[-2000:]
    data = json.loads(result.stdout.strip().splitlines()[-1])
    data["dirs"] = request["models"]
    return data


@pytest.mark.parametrize("family", sorted(TINY))
def test_parameter_count_equals_what_transformers_builds(probed, family):
    assert load_config(probed["dirs"][family]).params == probed["models"][family]["params"]


@pytest.mark.parametrize("family", sorted(TINY))
def test_full_finetune_state_bytes_equal_torch_allocations(probed, family):
    spec = load_config(probed["dirs"][family])
    predicted = gpu_memory(spec, Setup(method="full", precision="fp32", zero=0))
    measured = probed["models"][family]["full"]
    assert predicted.weights == measured["weights"]
    assert predicted.gradients == measured["gradients"]
    assert predicted.optimizer == measured["optimizer"]


@pytest.mark.parametrize("family", DENSE)
def test_lora_state_bytes_equal_torch_allocations(probed, family):
    measured = probed["models"][family]["lora"]
    if "skipped" in measured:
        pytest.skip(measured["skipped"])
    spec = load_config(probed["dirs"][family])
    setup = Setup(method="lora", precision="fp32", zero=0, lora_rank=8, lora_targets="all")
    predicted = gpu_memory(spec, setup)
    assert spec.lora_params(8, "all") == measured["trainable"]
    assert predicted.weights == measured["weights"]
    assert predicted.gradients == measured["gradients"]
    assert predicted.optimizer == measured["optimizer"]


@pytest.mark.parametrize("case", DS_CASES)
def test_written_deepspeed_config_is_accepted_by_trainer_and_deepspeed(probed, case):
    result = probed["deepspeed"][case]
    if "skipped" in result:
        pytest.skip(result["skipped"])
    assert result["ok"], result.get("error")
    if case.startswith("yaml"):
        assert result["stage"] == (3 if case == "yaml-full-z3" else 0)
        return
    zero, offload, precision = case.split("/")
    assert result["stage"] == int(zero) and result["micro_batch"] == 2 and result["grad_accum"] == 4
    assert result[precision] and not result["fp16" if precision == "bf16" else "bf16"]
    assert result["offload_optimizer"] == (offload != "none")
    assert result["offload_param"] == (offload == "all")
    assert result["gather_on_save"] == (zero == "3")


def test_a_hard_coded_config_that_disagrees_is_refused(probed):
    result = probed["deepspeed"]["hard-coded"]
    if "skipped" in result:
        pytest.skip(result["skipped"])
    assert not result["ok"] and "mismatch TrainingArguments" in result["error"]
