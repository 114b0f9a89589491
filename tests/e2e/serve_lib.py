"""What the Python checks of `serve` share (drain.py, supervise.py): PASS/FAIL lines for lib.sh's
run_checks, a serve started on a free port and killed at exit (only those this script started:
another test's serve may run beside it), and the instance token."""
import atexit
import os
import subprocess
import time

_started = []


@atexit.register
def _kill_started():
    for proc in _started:
        if proc.poll() is None:
            proc.kill()


def check(ok, what):
    print(("PASS: " if ok else "FAIL: ") + what, flush=True)


def start_serve(runner, env, tmp, name, args=()):
    """`RUNNER serve --listen 127.0.0.1:0 ARGS…`, its stderr in TMP/serve.NAME.err; gives
    (process, port, the stderr's path) once it listens."""
    err = open(os.path.join(tmp, "serve.%s.err" % name), "w")
    proc = subprocess.Popen([runner, "serve", "--listen", "127.0.0.1:0", *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=err)
    _started.append(proc)
    for _ in range(200):
        text = open(err.name).read()
        if "http://127.0.0.1:" in text:
            return proc, int(text.split("http://127.0.0.1:")[1].split()[0]), err.name
        time.sleep(0.05)
    raise SystemExit("serve did not start: " + open(err.name).read())


def token(store):
    return open(store + ".token").read().strip()
