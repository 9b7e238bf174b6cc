# Sourced by scripts/setup-torch and scripts/test-packaging (from the repository root): how an
# environment gets the user's torch, and how we tell that installing onnxlens left it alone.

UV_VERSION=0.13.9

# A user's pip, not this machine's: some machines here cap torch for every pip run
# (/etc/xdg/pip/pip.conf, `constraint = /etc/xdg/pip/constraints.txt`, `torch<=2.14.1`), so pip
# would "resolve" a user's torch 2.15.0 by downgrading it, which no user's pip does. The
# environment variable replaces the configured constraint file with an empty one; the machine's
# indexes stay.
export PIP_CONSTRAINT=/dev/null

# A user's torch, installed with uv (pinned, in .tools/uv/): uv keeps unpacked wheels in one cache
# (~/.cache/uv) and hard-links them into each environment, so the nvidia libraries of the CUDA
# builds (~5 GB per torch) are on disk once and another environment of a cached torch takes ~1 s.
# pip cannot do that, and its cache stores nothing here (the package host sends no caching
# headers): every pip install of a CUDA torch downloads and unpacks ~5 GB again (measured: 85 s
# with pip, 29 s with uv on an empty cache, 0.7 s with uv's cache).
#   install_torch ENV_DIR VERSION     (creates ENV_DIR with venv, pip included, if needed)
install_torch() {
  local env=$1 version=$2
  ensure_uv
  [ -x "$env/bin/python" ] || "${PYTHON:-python3}" -m venv "$env"  # with pip: the user's installer
  # 2.13.0 is the local CPU build in /opt/wheels (pip finds it through its own config, uv does
  # not read pip's); every other release is PyPI's CUDA build, which runs on the CPU.
  local links=()
  [ -d /opt/wheels ] && links=(--find-links /opt/wheels)
  .tools/uv/bin/uv pip install -q --python "$env/bin/python" "${links[@]}" "torch==$version"
}

# uv itself, pinned, in .tools/uv/ (git-ignored). The matrix sets up two torches at once: on a
# fresh machine both would create .tools/uv together (`venv` then fails on the lib64 symlink the
# other made), so the check-and-install holds a lock.
ensure_uv() {
  mkdir -p .tools
  (
    flock 9
    if [ "$(.tools/uv/bin/uv --version 2>/dev/null | cut -d' ' -f2)" != "$UV_VERSION" ]; then
      "${PYTHON:-python3}" -m venv .tools/uv
      .tools/uv/bin/pip install -q "uv==$UV_VERSION"
    fi
  ) 9>.tools/uv.lock
}

# What identifies the installed torch: its version and its RECORD (every file with its hash).
#   torch_fingerprint ENV_DIR
torch_fingerprint() {
  "$1/bin/python" - <<'PY'
import hashlib
from importlib.metadata import distribution
torch = distribution("torch")
print(torch.version, hashlib.sha256(torch.read_text("RECORD").encode()).hexdigest())
PY
}
