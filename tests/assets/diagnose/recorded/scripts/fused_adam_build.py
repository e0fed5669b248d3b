from deepspeed.ops.op_builder import FusedAdamBuilder
FusedAdamBuilder().load()
