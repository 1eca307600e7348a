# shellcheck shell=bash
# tarpkg.sh: tiny tarball packages for tests that need releases fast
# (eqota-gen publishes .tar packages like any other).
#
# Source it, then:
#   tarpkg FILE PATH CONTENT   writes the tarball FILE holding the folders
#                              of PATH and the file PATH (mode 0644, owner
#                              0) with CONTENT. The package's name and
#                              version come from FILE's name
#                              (NAME_VERSION.tar). Needs python3.
#   tarpkg_pair DIR V          writes DIR/p0_V.tar and DIR/p1_V.tar, 16 KB
#                              of data each, the same bytes for the same
#                              V and different ones for another V (so a
#                              second version has real deltas).

tarpkg() {
	python3 - "$1" "$2" "$3" <<'PY'
import io, sys, tarfile
out, path, body = sys.argv[1], sys.argv[2], sys.argv[3].encode()
parts = path.split("/")
with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
    for i in range(1, len(parts)):
        d = tarfile.TarInfo("/".join(parts[:i]))
        d.type, d.mode = tarfile.DIRTYPE, 0o755
        t.addfile(d)
    f = tarfile.TarInfo(path)
    f.mode, f.size = 0o644, len(body)
    t.addfile(f, io.BytesIO(body))
PY
}

tarpkg_pair() {
  python3 - "$@" <<'PY'
import io, os, random, sys, tarfile
out, v = sys.argv[1], int(sys.argv[2])
os.makedirs(out, exist_ok=True)
for i in range(2):
    body = bytearray(random.Random(i).randbytes(16384))
    for k in range(0, len(body), 997):
        body[k] = (body[k] + v) & 0xff
    with tarfile.open(os.path.join(out, "p%d_%d.tar" % (i, v)), "w", format=tarfile.PAX_FORMAT) as t:
        ti = tarfile.TarInfo("usr/share/p%d/data" % i)
        ti.mode, ti.size = 0o644, len(body)
        t.addfile(ti, io.BytesIO(bytes(body)))
PY
}
