import os, tempfile
os.environ.setdefault('MPLBACKEND', 'Agg')   # figures render headless in every test process
# Chapters write their figures to `figure_dir()`: under test that is a scratch folder, so a test
# run never rewrites the committed figures (chapter 09's are timings, different on every run).
os.environ.setdefault('MINIPAGED_FIGURE_DIR', tempfile.mkdtemp(prefix='minipaged-figures-'))

# Without a GPU, Triton kernels run in its interpreter, which must be switched on before anything
# imports triton (transformers does, on import): set it here, before any test module is imported.
import torch
if not torch.cuda.is_available(): os.environ.setdefault('TRITON_INTERPRET', '1')

# pytest-xdist runs two workers on CI's two cores: one torch thread each, or they oversubscribe.
if os.environ.get('PYTEST_XDIST_WORKER'): torch.set_num_threads(1)
