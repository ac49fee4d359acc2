import os
os.environ.setdefault('MPLBACKEND', 'Agg')   # figures render headless in every test process

# Without a GPU, Triton kernels run in its interpreter, which must be switched on before anything
# imports triton (transformers does, on import): set it here, before any test module is imported.
import torch
if not torch.cuda.is_available(): os.environ.setdefault('TRITON_INTERPRET', '1')

# pytest-xdist runs two workers on CI's two cores: one torch thread each, or they oversubscribe.
if os.environ.get('PYTEST_XDIST_WORKER'): torch.set_num_threads(1)
