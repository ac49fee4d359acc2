import os
os.environ.setdefault('MPLBACKEND', 'Agg')   # figures render headless in every test process
