"""`envcheck ckpt` on real checkpoints (tests/assets/ckpt, written by the real libraries; see PROVENANCE.md), and on
copies of them damaged the way a killed save, a full disk or a bad disk damages them. Each damage must be found
with the right file named, and `ckpt latest` must choose the older whole checkpoint."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from envcheck import cli

ASSETS = Path(__file__).parent / "assets" / "ckpt"


def ckpt(capsys, *args: str) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    code = cli.main(["ckpt", *args])
    out, err = capsys.readouterr()
    return code, out, err


def verify_json(capsys, path: Path, *flags: str) -> tuple[int, dict]:  # type: ignore[no-untyped-def, type-arg]
    code, out, err = ckpt(capsys, "verify", str(path), "--json", *flags)
    assert err == "", err
    return code, json.loads(out)


def by_name(doc: dict, name: str) -> dict:  # type: ignore[type-arg]
    return next(c for c in doc["checkpoints"] if c["name"] == name)


@pytest.fixture
def copy(tmp_path: Path):  # type: ignore[no-untyped-def]
    def make(name: str) -> Path:
        return Path(shutil.copytree(ASSETS / name, tmp_path / name))
    return make


def truncate(path: Path, keep: float = 0.5) -> None:
    size = path.stat().st_size
    with open(path, "r+b") as handle:
        handle.truncate(int(size * keep))


def flip(path: Path, offset: int) -> None:
    with open(path, "r+b") as handle:
        handle.seek(offset)
        byte = handle.read(1)
        handle.seek(offset)
        handle.write(bytes([byte[0] ^ 0x01]))


# ---- the real, untouched outputs are whole -------------------------------------------------------------------

@pytest.mark.parametrize("run, layouts, newest", [
    ("hf_run", ["hf-trainer", "hf-model"], "checkpoint-4"),
    ("peft_run", ["hf-trainer", "peft"], "checkpoint-4"),
    ("hf_ds_zero2", ["hf-trainer", "hf-model", "deepspeed"], "checkpoint-4"),
    ("ds_zero2", ["deepspeed"], "global_step4"),
    ("ds_zero3", ["deepspeed"], "global_step4"),
])
def test_real_outputs_are_whole(capsys, run, layouts, newest):
    code, doc = verify_json(capsys, ASSETS / run)
    assert code == 0, doc
    assert doc["ok"] and doc["kind"] == "run" and doc["problems"] == []
    assert all(c["status"] == "complete" and c["problems"] == [] for c in doc["checkpoints"])
    assert by_name(doc, newest)["layouts"] == layouts
    assert doc["resume_from"] == str(ASSETS / run / newest)


def test_deepspeed_world_size_and_stage_come_from_the_model_states_pickle(capsys):
    _, zero2 = verify_json(capsys, ASSETS / "ds_zero2")
    _, zero3 = verify_json(capsys, ASSETS / "ds_zero3")
    facts2 = by_name(zero2, "global_step4")["facts"]["deepspeed"]
    facts3 = by_name(zero3, "global_step2")["facts"]["deepspeed"]
    assert facts2 == {"tag": "global_step4", "zero_stage": 2, "bf16": False, "dp_world_size": 2, "mp_world_size": 1,
                      "global_steps": 4, "ds_version": "0.19.8", "source": "model states"}
    assert (facts3["zero_stage"], facts3["bf16"], facts3["dp_world_size"]) == (3, True, 2)


def test_single_checkpoint_and_the_final_sharded_model(capsys):
    code, doc = verify_json(capsys, ASSETS / "hf_run" / "checkpoint-2")
    assert code == 0 and doc["kind"] == "checkpoint" and doc["checkpoints"][0]["step"] == 2
    final = by_name(verify_json(capsys, ASSETS / "hf_run")[1], ".")
    assert final["resumable"] is False and final["files_checked"] == 5  # index + 2 shards + 2 configs


def test_a_lone_deepspeed_tag_is_a_checkpoint(capsys):
    code, doc = verify_json(capsys, ASSETS / "ds_zero3" / "global_step2")
    assert code == 0 and doc["checkpoints"][0]["layouts"] == ["deepspeed"]


# ---- damage found, with the file named ------------------------------------------------------------------------

def test_truncated_safetensors_is_named_with_its_sizes(capsys, copy):
    run = copy("hf_run")
    truncate(run / "checkpoint-4" / "model.safetensors")
    code, doc = verify_json(capsys, run)
    assert code == 1
    bad = by_name(doc, "checkpoint-4")
    assert bad["status"] == "incomplete"
    assert [(p["file"], p["kind"]) for p in bad["problems"]] == [("model.safetensors", "truncated")]
    assert "cut short" in bad["problems"][0]["detail"]
    assert doc["resume_from"] == str(run / "checkpoint-2")


def test_truncated_torch_zip_is_named(capsys, copy):
    run = copy("hf_run")
    truncate(run / "checkpoint-4" / "optimizer.pt", 0.9)
    _, doc = verify_json(capsys, run)
    problems = by_name(doc, "checkpoint-4")["problems"]
    assert [(p["file"], p["kind"]) for p in problems] == [("optimizer.pt", "truncated")]


def test_empty_file_is_truncated(capsys, copy):
    run = copy("ds_zero2")
    (run / "global_step4" / "zero_pp_rank_0_mp_rank_00_optim_states.pt").write_bytes(b"")
    _, doc = verify_json(capsys, run)
    problems = by_name(doc, "global_step4")["problems"]
    assert [(p["file"], p["kind"], p["detail"]) for p in problems] == [
        ("zero_pp_rank_0_mp_rank_00_optim_states.pt", "truncated", "empty (0 bytes)")]


def test_missing_rank_shard_is_found_from_the_saved_world_size(capsys, copy):
    run = copy("ds_zero2")
    (run / "global_step4" / "zero_pp_rank_1_mp_rank_00_optim_states.pt").unlink()
    code, doc = verify_json(capsys, run)
    assert code == 1
    bad = by_name(doc, "global_step4")
    assert bad["status"] == "incomplete"
    assert [(p["file"], p["kind"]) for p in bad["problems"]] == [("zero_pp_rank_1_mp_rank_00_optim_states.pt",
                                                                 "missing")]
    assert "dp_world_size 2" in bad["problems"][0]["detail"]
    assert doc["problems"] == [{"file": "latest", "kind": "mismatch", "detail": "names global_step4, which is "
                                                                                "incomplete"}]
    assert doc["resume_from"] == str(run / "global_step2")


def test_missing_zero3_model_states_and_bf16_shard(capsys, copy):
    run = copy("ds_zero3")
    (run / "global_step4" / "zero_pp_rank_1_mp_rank_00_model_states.pt").unlink()
    (run / "global_step2" / "bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt").unlink()
    _, doc = verify_json(capsys, run)
    assert [p["file"] for p in by_name(doc, "global_step4")["problems"]] == [
        "zero_pp_rank_1_mp_rank_00_model_states.pt"]
    assert [p["file"] for p in by_name(doc, "global_step2")["problems"]] == [
        "bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt"]
    assert doc["resume_from"] is None


def test_missing_rank_shard_inside_a_trainer_checkpoint(capsys, copy):
    run = copy("hf_ds_zero2")
    (run / "checkpoint-4" / "global_step4" / "zero_pp_rank_1_mp_rank_00_optim_states.pt").unlink()
    _, doc = verify_json(capsys, run)
    assert [p["file"] for p in by_name(doc, "checkpoint-4")["problems"]] == [
        "global_step4/zero_pp_rank_1_mp_rank_00_optim_states.pt"]
    assert doc["resume_from"] == str(run / "checkpoint-2")


def test_flipped_byte_in_a_torch_zip_fails_its_crc(capsys, copy):
    run = copy("hf_run")
    target = run / "checkpoint-4" / "optimizer.pt"
    flip(target, target.stat().st_size // 2)
    _, doc = verify_json(capsys, run)
    bad = by_name(doc, "checkpoint-4")
    assert bad["status"] == "corrupt"
    assert [(p["file"], p["kind"]) for p in bad["problems"]] == [("optimizer.pt", "corrupt")]
    assert "CRC-32" in bad["problems"][0]["detail"]


def test_flipped_byte_in_a_safetensors_header_is_corrupt(capsys, copy):
    run = copy("peft_run")
    flip(run / "checkpoint-4" / "adapter_model.safetensors", 20)
    _, doc = verify_json(capsys, run)
    assert [(p["file"], p["kind"]) for p in by_name(doc, "checkpoint-4")["problems"]] == [
        ("adapter_model.safetensors", "corrupt")]


def test_missing_latest_target_in_a_deepspeed_save_dir(capsys, copy):
    run = copy("ds_zero2")
    shutil.rmtree(run / "global_step4")
    code, doc = verify_json(capsys, run)
    assert code == 1
    assert doc["problems"] == [{"file": "latest", "kind": "missing", "detail": "names global_step4, which does "
                                                                               "not exist"}]
    assert doc["resume_from"] == str(run / "global_step2")


def test_missing_latest_target_inside_a_trainer_checkpoint(capsys, copy):
    run = copy("hf_ds_zero2")
    shutil.rmtree(run / "checkpoint-4" / "global_step4")
    _, doc = verify_json(capsys, run)
    problems = by_name(doc, "checkpoint-4")["problems"]
    assert [(p["file"], p["kind"]) for p in problems] == [("global_step4/", "missing")]
    assert "`latest` names global_step4" in problems[0]["detail"]


def test_missing_latest_file(capsys, copy):
    run = copy("hf_ds_zero2")
    (run / "checkpoint-4" / "latest").unlink()
    bare = copy("ds_zero2")
    (bare / "latest").unlink()
    _, doc = verify_json(capsys, run)
    assert [p["file"] for p in by_name(doc, "checkpoint-4")["problems"]] == ["latest"]
    code, doc = verify_json(capsys, bare)
    assert code == 1 and doc["problems"][0]["file"] == "latest" and doc["problems"][0]["kind"] == "missing"


def half_written(run: Path, source: str, name: str) -> Path:
    """What a Trainer killed mid-save leaves: the weights are written, the optimizer state is cut short, the
    scheduler, RNG and trainer_state.json (written last) never came."""
    new = run / name
    new.mkdir()
    for file in ("config.json", "generation_config.json", "model.safetensors", "training_args.bin"):
        shutil.copy(run / source / file, new / file)
    data = (run / source / "optimizer.pt").read_bytes()
    (new / "optimizer.pt").write_bytes(data[: len(data) // 3])
    return new


def test_half_written_newest_checkpoint_and_latest_chooses_the_older_whole_one(capsys, copy):
    run = copy("hf_run")
    half_written(run, "checkpoint-4", "checkpoint-6")
    _, doc = verify_json(capsys, run)
    bad = by_name(doc, "checkpoint-6")
    assert bad["status"] == "incomplete"
    assert sorted((p["file"], p["kind"]) for p in bad["problems"]) == [
        ("optimizer.pt", "truncated"), ("rng_state.pth", "missing"), ("scheduler.pt", "missing"),
        ("trainer_state.json", "missing")]
    code, out, err = ckpt(capsys, "latest", str(run))
    assert code == 0 and out == f"{run / 'checkpoint-4'}\n"
    assert "skipped checkpoint-6: incomplete" in err


def test_half_written_deepspeed_tag_latest_still_names_the_old_one(capsys, copy):
    run = copy("ds_zero2")
    new = run / "global_step6"
    new.mkdir()
    shutil.copy(run / "global_step4" / "mp_rank_00_model_states.pt", new)
    code, out, _ = ckpt(capsys, "latest", str(run))
    assert code == 0 and out.strip() == str(run / "global_step4")
    _, doc = verify_json(capsys, run)
    assert {p["file"] for p in by_name(doc, "global_step6")["problems"]} == {
        "zero_pp_rank_0_mp_rank_00_optim_states.pt", "zero_pp_rank_1_mp_rank_00_optim_states.pt",
        "mp_rank_00_model_states.pt"}  # global_steps 4 in a tag named global_step6: another save's file


def test_trainer_state_step_must_match_the_name(capsys, copy):
    run = copy("peft_run")
    state = run / "checkpoint-4" / "trainer_state.json"
    state.write_text(state.read_text().replace('"global_step": 4', '"global_step": 3'))
    _, doc = verify_json(capsys, run)
    assert [(p["file"], p["kind"]) for p in by_name(doc, "checkpoint-4")["problems"]] == [
        ("trainer_state.json", "mismatch")]


def test_half_written_trainer_state_json(capsys, copy):
    run = copy("peft_run")
    truncate(run / "checkpoint-4" / "trainer_state.json")
    _, doc = verify_json(capsys, run)
    assert [p["file"] for p in by_name(doc, "checkpoint-4")["problems"]] == ["trainer_state.json"]


def test_missing_peft_adapter_and_missing_index_shard(capsys, copy):
    peft = copy("peft_run")
    (peft / "checkpoint-2" / "adapter_model.safetensors").unlink()
    _, doc = verify_json(capsys, peft)
    assert [p["file"] for p in by_name(doc, "checkpoint-2")["problems"]] == ["adapter_model.safetensors"]
    full = copy("hf_run")
    (full / "model-00002-of-00002.safetensors").unlink()
    _, doc = verify_json(capsys, full)
    assert [p["file"] for p in by_name(doc, ".")["problems"]] == ["model-00002-of-00002.safetensors"]
    assert doc["resume_from"] == str(full / "checkpoint-4")  # the final model is not a resume candidate


def test_nothing_whole_means_latest_exits_1(capsys, copy):
    run = copy("peft_run")
    for step in (2, 4):
        (run / f"checkpoint-{step}" / "trainer_state.json").unlink()
    code, out, err = ckpt(capsys, "latest", str(run))
    assert code == 1 and out == "" and "no whole checkpoint" in err


def test_llamafactory_output_dir_is_recognized(capsys, copy):
    run = copy("peft_run")
    (run / "trainer_log.jsonl").write_text('{"current_steps": 4, "total_steps": 4, "loss": 3.86}\n')  # its marker
    _, doc = verify_json(capsys, run)
    assert by_name(doc, "checkpoint-4")["layouts"] == ["hf-trainer", "peft", "llamafactory"]


def test_text_report_names_the_file_and_the_resume_choice(capsys, copy):
    run = copy("hf_ds_zero2")
    (run / "checkpoint-4" / "global_step4" / "zero_pp_rank_1_mp_rank_00_optim_states.pt").unlink()
    code, out, err = ckpt(capsys, "verify", str(run))
    assert code == 1 and err == ""
    assert "checkpoint-4  incomplete" in out
    assert "missing   global_step4/zero_pp_rank_1_mp_rank_00_optim_states.pt" in out
    assert out.endswith(f"resume from: {run / 'checkpoint-2'} (newer ones are not whole)\n")
