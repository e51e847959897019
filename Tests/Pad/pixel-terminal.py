#!/usr/bin/python3
"""A terminal that knows SGR-Pixels mouse reports (mode 1016), for PadDrawTests.

    pixel-terminal.py OUTPUT COLUMNS ROWS CELL_WIDTH CELL_HEIGHT supported|unsupported -- PROGRAM ARGS...

Runs PROGRAM on a new pseudo-terminal of COLUMNS x ROWS cells, each CELL_WIDTH x CELL_HEIGHT
pixels, with its standard output in the file OUTPUT. It plays the terminal's side of the
pad's handshake: answers the mode query (ESC [ ? 1016 $ p) with "reset, can be set" when
`supported`, "not recognized" otherwise; answers the cell-size query (ESC [ 16 t) with
ESC [ 6 ; CELL_HEIGHT ; CELL_WIDTH t; and, like a real terminal, sends pixel reports only once
the program has switched the mode on (ESC [ ? 1016 h). Then it writes the mouse reports read
from its own standard input (one per line, the bytes after ESC [ <, e.g. "0;141;481M"),
waits for the screen to show PARTS (the last line of its input, "parts: TEXT"), and presses
Enter. It prints what it saw, one event a line: "asked mode", "asked cell size", "mode on",
"mode off", "status N", and the program's output lines as "output: ...". Everything is bounded
by a 20-second deadline (exit 3, program killed).
"""
import os
import pty
import select
import signal
import struct
import sys
import termios
import fcntl
import time

output_path, columns, rows, cell_width, cell_height, mode = sys.argv[1:7]
assert sys.argv[7] == "--"
program = sys.argv[8:]
columns, rows, cell_width, cell_height = int(columns), int(rows), int(cell_width), int(cell_height)
lines = sys.stdin.read().split("\n")
reports = [line for line in lines if line and not line.startswith("parts: ")]
parts = next((line[len("parts: "):] for line in lines if line.startswith("parts: ")), None)

pid, master = pty.fork()
if pid == 0:
    fcntl.ioctl(0, termios.TIOCSWINSZ,
                struct.pack("HHHH", rows, columns, columns * cell_width, rows * cell_height))
    out = os.open(output_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(out, 1)
    os.close(out)
    env = dict(os.environ, TERM="xterm-256color", COLORTERM="truecolor")
    os.execve(program[0], program, env)

deadline = time.monotonic() + 20
seen = b""
events = []


def fail(reason):
    print("timeout: " + reason)
    for event in events:
        print(event)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    sys.exit(3)


def read_until(condition, reason):
    """Reads the program's terminal output until condition(seen) holds."""
    global seen
    while not condition(seen):
        left = deadline - time.monotonic()
        if left <= 0:
            fail(reason)
        ready, _, _ = select.select([master], [], [], left)
        if not ready:
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            return False
        seen += chunk
    return True


def note(flag, text):
    if flag in seen and text not in events:
        events.append(text)


read_until(lambda s: b"\x1b[?1016$p" in s, "no mode query")
note(b"\x1b[?1016$p", "asked mode")
os.write(master, b"\x1b[?1016;2$y" if mode == "supported" else b"\x1b[?1016;0$y")
if mode == "supported":
    read_until(lambda s: b"\x1b[16t" in s, "no cell-size query")
    note(b"\x1b[16t", "asked cell size")
    os.write(master, b"\x1b[6;%d;%dt" % (cell_height, cell_width))
    read_until(lambda s: b"\x1b[?1016h" in s, "the mode was not switched on")
    note(b"\x1b[?1016h", "mode on")
read_until(lambda s: b"Enter: done" in s, "no drawing screen")
for report in reports:
    os.write(master, b"\x1b[<" + report.encode())
if parts is not None:
    mark = len(seen)
    read_until(lambda s: parts.encode() in s[mark:], "the screen never showed " + parts)
os.write(master, b"\r")
read_until(lambda s: False, "the program did not end")  # until end of file
note(b"\x1b[16t", "asked cell size")
note(b"\x1b[?1016h", "mode on")
note(b"\x1b[?1016l", "mode off")
_, status = os.waitpid(pid, 0)
events.append("status %d" % (os.waitstatus_to_exitcode(status)))
for event in events:
    print(event)
with open(output_path) as produced:
    for line in produced.read().splitlines():
        print("output: " + line)
