"""`envcheck ckpt`: which checkpoint is whole before you resume (HF Trainer, PEFT, DeepSpeed, LLaMA-Factory).

Stages: layout (recognize directories, list what each needs) -> integrity (stream and check each file) ->
Verdicts (model). Nothing here imports torch: zip CRCs, safetensors headers and a restricted unpickler suffice.
"""
