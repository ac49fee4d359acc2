"Worked solutions to the exercises of chapter 07c (fetching a real model)."
import hashlib
from pathlib import Path


def sha256_of_chunks(chunks) -> str:
    "The hex SHA-256 of the concatenation of the byte strings `chunks`"
    # a hash object takes its input in pieces: feeding the chunks in order is hashing their concatenation
    h = hashlib.sha256()
    for chunk in chunks: h.update(chunk)
    return h.hexdigest()


def cache_folder_of(name: str, env: dict) -> Path:
    "The folder a fetch of `name` writes, under the environment `env`"
    # an empty variable counts as unset, as a shell's `export X=` would leave it
    if env.get('MINIPAGED_CACHE'):
        folder = env['MINIPAGED_CACHE']
        # a leading ~ is the home folder, as expanduser reads it
        root = Path(env['HOME'] + folder[1:] if folder.startswith('~') else folder)
    else: root = Path(env.get('XDG_CACHE_HOME') or Path(env['HOME']) / '.cache') / 'minipaged'
    return root / 'models' / name
