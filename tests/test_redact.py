"""Redaction of secrets, user names and home paths."""

from __future__ import annotations

from envcheck.redact import REDACTED, Redactor, is_secret_name, select_env


def test_secret_names() -> None:
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "WANDB_API_KEY", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD",
                 "GITHUB_PAT", "OPENAI_API_KEY", "NCCL_IB_AUTH_KEY", "MY_CREDENTIALS"):
        assert is_secret_name(name), name
    for name in ("CUDA_HOME", "NCCL_DEBUG", "KEYBOARD_LAYOUT_FILE", "MONKEY", "HF_HOME", "TORCH_CUDA_ARCH_LIST"):
        assert not is_secret_name(name), name


def test_select_env_keeps_relevant_and_redacts_secrets() -> None:
    chosen = select_env({"HF_TOKEN": "hf_x", "NCCL_DEBUG": "INFO", "SSH_AUTH_SOCK": "/tmp/x", "EDITOR": "vim",
                         "CUDA_VISIBLE_DEVICES": "0,1", "OPENAI_API_KEY": "sk-abc"})
    assert chosen == {"CUDA_VISIBLE_DEVICES": "0,1", "HF_TOKEN": REDACTED, "NCCL_DEBUG": "INFO"}


def test_text_redaction() -> None:
    redactor = Redactor(home="/home/carol", user="carol", environ={"MY_SECRET": "s3cr3t-value"})
    assert redactor.text("/home/carol/venv/bin/python") == "~/venv/bin/python"
    assert redactor.text("/home/dave/x") == "/home/<user>/x"
    assert redactor.text("/Users/erin/x") == "/Users/<user>/x"
    assert redactor.text("/data/carol/ckpt and carol@host") == "/data/<user>/ckpt and <user>@host"
    assert redactor.text("error: token s3cr3t-value rejected") == f"error: token {REDACTED} rejected"
    assert redactor.text("https://u:p@example.com/x") == f"https://{REDACTED}@example.com/x"
    assert REDACTED in redactor.text("Authorization: hf_" + "a" * 34)
    assert redactor.text("/dev/shm") == "/dev/shm"


def test_common_path_words_are_not_taken_for_a_user_name() -> None:
    assert Redactor(home="/dev", user="dev", environ={}).text("/dev/shm /usr/local/cuda") == "/dev/shm /usr/local/cuda"


def test_tree_redacts_keys_and_values() -> None:
    redactor = Redactor(home="/home/carol", user="carol", environ={})
    assert redactor.tree({"/home/carol/a": ["/home/carol/b", 3, None]}) == {"~/a": ["~/b", 3, None]}


def test_home_prefix_of_another_directory_is_left_alone() -> None:
    assert Redactor(home="/data/carol", user="x", environ={}).text("/data/caroline/x") == "/data/caroline/x"
