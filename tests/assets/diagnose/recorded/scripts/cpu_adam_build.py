from deepspeed.ops.op_builder import CPUAdamBuilder
CPUAdamBuilder().load()
