# Runs inside the interpreter being probed (any CPython >= 3.6), never inside envcheck's own process.
# Standard library only and no imports of installed packages: it reads dist-info / egg-info files directly, so
# corrupt metadata, duplicate installs and a torch that crashes on import cannot stop it.
# Prints one JSON object on stdout.
import email.parser
import json
import os
import re
import sys


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def read_text(path):
    with open(path, "rb") as handle:
        return handle.read().decode("utf-8", "replace")


def headers_of(text):
    head = text.replace("\r\n", "\n").split("\n\n", 1)[0]
    return email.parser.HeaderParser().parsestr(head)


def egg_requires(path):
    """Requirements of an .egg-info: requires.txt lists the base ones, then [extra] or [extra:marker] or [:marker]
    sections; each becomes one PEP 508 string with its marker, as Requires-Dist writes it."""
    requires = []
    try:
        text = read_text(os.path.join(path, "requires.txt"))
    except OSError:
        return requires
    marker = ""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("[") and line.endswith("]"):
            extra, _, condition = line[1:-1].partition(":")
            parts = (["(%s)" % condition] if condition else []) + (['extra == "%s"' % extra] if extra else [])
            marker = " and ".join(parts)
            continue
        if line and not line.startswith("#"):
            requires.append("%s; %s" % (line, marker) if marker else line)
    return requires


def read_dist(site, entry):
    path = os.path.join(site, entry)
    is_egg = entry.endswith(".egg-info")
    meta_path = path if (is_egg and os.path.isfile(path)) else os.path.join(path, "PKG-INFO" if is_egg else "METADATA")
    try:
        meta = headers_of(read_text(meta_path))
    except OSError as error:
        return None, "%s: metadata unreadable (%s)" % (path, error.strerror or error)
    except Exception as error:  # a malformed header block
        return None, "%s: metadata unparsable (%s)" % (path, error)
    name, version = meta.get("Name"), meta.get("Version")
    if not name or not version:
        return None, "%s: metadata has no %s" % (path, "Name" if not name else "Version")
    requires = meta.get_all("Requires-Dist") or []
    if is_egg and os.path.isdir(path):
        requires = egg_requires(path)
    # Kept with their markers, extras' too: checks evaluate them for this interpreter (an extra's requirement
    # applies only where that extra was asked for, which metadata does not record).
    requires = [r.strip() for r in requires]
    dist = {"name": normalize(name.strip()), "version": version.strip(), "requires": requires,
            "location": site}
    if dist["name"].startswith("nvidia-") and not is_egg:
        dist["libs"] = nvidia_libs(site, path)
    return dist, None


def nvidia_libs(site, dist_path):
    """Shared libraries an nvidia-* wheel installed, from its RECORD (so the library probe can version them)."""
    libs = []
    try:
        text = read_text(os.path.join(dist_path, "RECORD"))
    except OSError:
        return libs
    for line in text.splitlines():
        relative = line.split(",", 1)[0]
        if "/lib/lib" in relative and ".so" in relative:
            libs.append(os.path.normpath(os.path.join(site, relative)))
    return libs


def find_file(sites, relative):
    for site in sites:
        candidate = os.path.join(site, relative)
        if os.path.isfile(candidate):
            return candidate
    return None


def env_kind():
    if os.path.isdir(os.path.join(sys.prefix, "conda-meta")):
        return "conda"
    if sys.prefix != getattr(sys, "base_prefix", sys.prefix) or os.path.isfile(os.path.join(sys.prefix, "pyvenv.cfg")):
        return "venv"
    return "system"


def marker_env():
    """The PEP 508 marker variables of this interpreter, so requirements are judged for it, not for envcheck's."""
    import platform
    impl = sys.implementation
    version = "%d.%d.%d" % impl.version[:3]
    if impl.version.releaselevel != "final":
        version += impl.version.releaselevel[0] + str(impl.version.serial)
    return {
        "implementation_name": impl.name,
        "implementation_version": version,
        "os_name": os.name,
        "platform_machine": platform.machine(),
        "platform_python_implementation": platform.python_implementation(),
        "platform_release": platform.release(),
        "platform_system": platform.system(),
        "platform_version": platform.version(),
        "python_full_version": platform.python_version(),
        "python_version": ".".join(platform.python_version_tuple()[:2]),
        "sys_platform": sys.platform,
    }


def main():
    sites = []
    for entry in sys.path:
        if entry and os.path.isdir(entry) and os.path.abspath(entry) not in sites:
            sites.append(os.path.abspath(entry))
    dists, broken = [], []
    for site in sites:
        try:
            entries = sorted(os.listdir(site))
        except OSError:
            continue
        for entry in entries:
            if entry.endswith(".dist-info") or entry.endswith(".egg-info"):
                dist, problem = read_dist(site, entry)
                if dist is not None:
                    dists.append(dist)
                else:
                    broken.append(problem)
    print(json.dumps({
        "version": "%d.%d.%d" % sys.version_info[:3],
        "executable": sys.executable,
        "prefix": sys.prefix,
        "kind": env_kind(),
        "marker_env": marker_env(),
        "sites": sites,
        "dists": dists,
        "broken": broken,
        "torch_version_file": find_file(sites, os.path.join("torch", "version.py")),
        "deepspeed_info_file": find_file(sites, os.path.join("deepspeed", "git_version_info_installed.py")),
    }))


main()
