#!/usr/bin/python3
"""deb-test-term.py PROMPT ANSWER [PROMPT ANSWER ...] -- COMMAND [ARG ...]

Runs COMMAND on a new pseudo-terminal and types each ANSWER once the output since the
previous answer contains PROMPT (compared in lowercase); prints everything the terminal
showed and exits with the command's status. Bounded to 60 seconds."""
import os, pty, select, sys, time

args = sys.argv[1:]
split = args.index("--")
pairs = args[:split]
command = args[split + 1:]
answers = [(pairs[i].lower(), pairs[i + 1]) for i in range(0, len(pairs), 2)]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(command[0], command)
output = b""
mark = 0
answered = 0
deadline = time.time() + 60
while time.time() < deadline:
    ready, _, _ = select.select([fd], [], [], 0.1)
    if not ready:
        continue
    try:
        data = os.read(fd, 4096)
    except OSError:
        break
    if not data:
        break
    output += data
    if answered < len(answers) and answers[answered][0] in output[mark:].decode(errors="replace").lower():
        time.sleep(0.05)
        os.write(fd, (answers[answered][1] + "\n").encode())
        answered += 1
        mark = len(output)
try:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done == 0:
        os.kill(pid, 9)
        _, status = os.waitpid(pid, 0)
except ChildProcessError:
    status = 0
sys.stdout.write(output.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status >> 8)
