"""lms_build - the PEP 517 backend of python/pyproject.toml.

`pip install ./python` builds a wheel of lms_torch.py and lms_offload.py
with the C libraries they load (liblms.so.0, liblms_torch.so.0) in
lms.libs/ beside them, where find_library() in each module looks first.
The libraries come from, in order:
  LMS_LIB_DIR     a directory holding them (a build's lib/, or an
                  install's), copied as they are;
  otherwise       a CMake build of the source tree this directory sits in
                  (../ of python/), with LMS_CMAKE_ARGS added to the
                  configure line (e.g. -DCMAKE_CUDA_ARCHITECTURES=native),
                  of the two library targets alone.
It is written with the standard library only, so pip's isolated build
environment needs nothing from an index: the install works offline.  No
sdist: the package is built from the source tree.
"""

import base64
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sysconfig
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.dirname(HERE)
ROOT = os.path.dirname(PYDIR)
NAME = "lms_torch"
DIST = "lms-torch"
MODULES = ("lms_torch.py", "lms_offload.py")
LIBS = ("liblms.so.0", "liblms_torch.so.0")


def _version():
    """The version of include/lms/lms.h, the C library's."""
    header = os.path.join(ROOT, "include", "lms", "lms.h")
    parts = {}
    with open(header) as f:
        for line in f:
            m = re.match(r"#define LMS_VERSION_(MAJOR|MINOR|PATCH) (\d+)", line)
            if m:
                parts[m.group(1)] = m.group(2)
    if len(parts) != 3:
        raise RuntimeError(f"lms_build: no LMS_VERSION_* in {header}")
    return "%s.%s.%s" % (parts["MAJOR"], parts["MINOR"], parts["PATCH"])


def _libs_from(directory):
    found = {}
    for lib in LIBS:
        path = os.path.join(directory, lib)
        if os.path.exists(path):
            found[lib] = os.path.realpath(path)
    return found


def _build_libs(work):
    """Builds the libraries with CMake; returns {soname: path}."""
    src = os.environ.get("LMS_LIB_DIR")
    if src:
        found = _libs_from(src)
        if "liblms.so.0" not in found:
            raise RuntimeError(f"lms_build: LMS_LIB_DIR={src} holds no "
                               "liblms.so.0; accepted: the lib directory of "
                               "an lms build or install")
        return found
    if not os.path.exists(os.path.join(ROOT, "CMakeLists.txt")):
        raise RuntimeError(f"lms_build: {ROOT} is not the lms source tree "
                           "(no CMakeLists.txt); set LMS_LIB_DIR to the lib "
                           "directory of an lms build or install")
    cmake = shutil.which("cmake")
    if cmake is None:
        raise RuntimeError("lms_build: cmake is not on PATH; install it, or "
                           "set LMS_LIB_DIR to the lib directory of an lms "
                           "build or install")
    build = os.path.join(work, "build")
    configure = [cmake, "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release"]
    configure += shlex.split(os.environ.get("LMS_CMAKE_ARGS", ""))
    subprocess.run(configure, check=True, stdout=subprocess.DEVNULL)
    jobs = str(os.cpu_count() or 1)
    subprocess.run([cmake, "--build", build, "--target", "lms", "-j", jobs],
                   check=True, stdout=subprocess.DEVNULL)
    # liblms_torch.so is built where cuda.h is found (src/stable).
    subprocess.run([cmake, "--build", build, "--target", "lms_torch", "-j",
                    jobs], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return _libs_from(os.path.join(build, "lib"))


def _tag():
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return "py3-none-" + plat


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest())
    return "%s,sha256=%s,%d" % (arcname, digest.rstrip(b"=").decode(),
                               len(data))


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None,
                metadata_directory=None):
    version = _version()
    info = "%s-%s.dist-info" % (NAME, version)
    wheel = "%s-%s-%s.whl" % (NAME, version, _tag())
    files = []
    with tempfile.TemporaryDirectory() as work:
        libs = _build_libs(work)
        for mod in MODULES:
            with open(os.path.join(PYDIR, mod), "rb") as f:
                files.append((mod, f.read()))
        for soname, path in sorted(libs.items()):
            with open(path, "rb") as f:
                files.append(("lms.libs/" + soname, f.read()))
    metadata = ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n"
                "Summary: Large Model Support for PyTorch: tensors beyond "
                "GPU memory, prefetched over the CPU-GPU link\n"
                "License: MIT\nRequires-Python: >=3.8\n" % (DIST, version))
    files.append((info + "/METADATA", metadata.encode()))
    files.append((info + "/WHEEL", ("Wheel-Version: 1.0\nGenerator: "
                                    "lms_build\nRoot-Is-Purelib: false\n"
                                    "Tag: %s\n" % _tag()).encode()))
    with open(os.path.join(ROOT, "LICENSE"), "rb") as f:
        files.append((info + "/LICENSE", f.read()))
    record = [_record_line(name, data) for name, data in files]
    record.append(info + "/RECORD,,")
    files.append((info + "/RECORD", ("\n".join(record) + "\n").encode()))
    path = os.path.join(wheel_directory, wheel)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files:
            zi = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            # Libraries executable, as a linker leaves them.
            zi.external_attr = (0o755 if name.startswith("lms.libs/")
                                else 0o644) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    return wheel
