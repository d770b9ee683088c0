# Profiling scopes as libtorch's record_function ranges, for `butterfly profile`: each shows in the profiler's trace
# with the operations it holds. Each costs a few microseconds even with the profiler off, so serving stages are
# compiled with profile_off.py instead.


def enter(name: str) -> __torch__.torch.classes.profiler._RecordFunction:
  return ops.profiler._record_function_enter_new(name, None)


def enter_layer(layer: int) -> __torch__.torch.classes.profiler._RecordFunction:
  return ops.profiler._record_function_enter_new("layer " + str(layer), None)


def exit(scope: __torch__.torch.classes.profiler._RecordFunction) -> None:
  ops.profiler._record_function_exit(scope)
