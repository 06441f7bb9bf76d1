# SPDX-License-Identifier: Apache-2.0
"""A wheel made again from an installed distribution's files, for the GPU machine, which has no index:
there the release wheel's `nvrtc` extra needs NVIDIA's NVRTC wheel, too large to carry, which the
machine's PyTorch environment has installed. Every file its RECORD lists goes into the wheel (the
installer's own INSTALLER, REQUESTED and direct_url.json aside), the tag from its WHEEL file, a new
RECORD with the files' hashes.

    python3 scripts/gpu/repack_installed.py DISTRIBUTION OUT_DIR    # prints the wheel's path
"""

import base64
import csv
import hashlib
import io
import os
import sys
import zipfile
from importlib import metadata

INSTALLER_FILES = {"INSTALLER", "REQUESTED", "direct_url.json", "RECORD"}


def main(name, out_dir):
    distribution = metadata.distribution(name)
    info = None
    files = []
    for path in distribution.files or []:
        parts = path.parts
        if parts[0].endswith(".dist-info"):
            info = parts[0]
            if parts[-1] in INSTALLER_FILES:
                continue
        if ".." in parts or path.suffix == ".pyc":
            continue
        files.append(path)
    if info is None:
        raise SystemExit("repack_installed: %s has no .dist-info in its RECORD" % name)
    wheel_file = distribution.read_text("WHEEL") or ""
    tags = [line.split(":", 1)[1].strip() for line in wheel_file.splitlines() if line.startswith("Tag:")]
    if not tags:
        raise SystemExit("repack_installed: %s's WHEEL names no tag" % name)
    stem = info[: -len(".dist-info")]
    os.makedirs(out_dir, exist_ok=True)
    target = os.path.join(out_dir, "%s-%s.whl" % (stem, tags[0]))
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as wheel:
        for path in files:
            data = distribution.locate_file(path).read_bytes()
            wheel.writestr(str(path), data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            writer.writerow([str(path), "sha256=" + digest, len(data)])
        writer.writerow([info + "/RECORD", "", ""])
        wheel.writestr(info + "/RECORD", record.getvalue())
    print(target)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
