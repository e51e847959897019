#!/usr/bin/env python3
"""A headless Wayland compositor with ext-session-lock-v1, for puff-lock's tests.

Built on pywlroots 0.17 (wlroots 0.17: headless backend, pixman renderer, session lock,
screencopy for grim). Debian 12 has no compositor with the protocol; this one is small
enough to read. Its policy is sway's: while a lock is held, every output shows a black
blanket under its lock surface; a lock whose client dies without unlock_and_destroy stays
(the session remains locked, "abandoned"), and only a new lock client may take it over; a
second lock while a live one exists is refused (`finished`).

Under the lock sits the "desktop": each output filled with magenta (0xff00ff), so a
screenshot in which magenta shows is a session that is not covered.

Usage: lock-compositor.py [--without-session-lock] RUNTIME_DIR [WIDTHxHEIGHT ...]
It creates RUNTIME_DIR/wayland-puff (the Wayland socket, mode 0666 so the locker may run as
another user) and RUNTIME_DIR/control (commands, one per connection, a line each way):

  state                 locked | unlocked | abandoned   (abandoned: still locked, client gone)
  outputs               NAME X Y W H SURFACE            one per output, SURFACE mapped|none
  add-output W H        NAME of the new output
  remove-output NAME    ok
  down X Y | move X Y | up          the pointer's left button, layout coordinates
  touch-down X Y | touch-move X Y | touch-up
  drag X Y X Y ...      a stroke with the left button: down, moves, up
  touch-drag X Y ...    the same with one finger
  type TEXT             digits and lower-case letters, each pressed and released
  key enter|backspace|escape|space
  quit
"""
import os
import socket
import sys
import time

os.environ.setdefault("WLR_RENDERER", "pixman")
os.environ.setdefault("WLR_LIBINPUT_NO_DEVICES", "1")

from pywayland.protocol.wayland import WlSeat
from pywayland.server import Display, Listener, Signal
from pywayland.server.eventloop import EventLoop
from wlroots import ffi, lib
from wlroots.helper import build_compositor
from wlroots.backend import BackendType
from wlroots.wlr_types import OutputLayout, Output
from wlroots.wlr_types.keyboard import Keyboard
from wlroots.wlr_types.scene import Scene, SceneOutput, SceneRect, SceneTree
from wlroots.wlr_types.screencopy_v1 import ScreencopyManagerV1
from wlroots.wlr_types.seat import Seat
from wlroots.wlr_types.session_lock_v1 import SessionLockManagerV1
from wlroots.wlr_types.compositor import Surface
from wlroots.wlr_types.xdg_output_v1 import XdgOutputManagerV1
from wlroots.util.clock import Timespec

# evdev key codes
KEYS = {"enter": 28, "backspace": 14, "escape": 1, "space": 57}
for index, character in enumerate("1234567890"):
    KEYS[character] = 2 + index
for row, letters in ((16, "qwertyuiop"), (30, "asdfghjkl"), (44, "zxcvbnm")):
    for index, character in enumerate(letters):
        KEYS[character] = row + index
BUTTON_LEFT = 0x110


def now_ms():
    return int(time.monotonic() * 1000) & 0xFFFFFFFF


def colour(red, green, blue):
    return ffi.new("float[4]", [red, green, blue, 1.0])


class Compositor:
    def __init__(self, runtime, sizes, without_lock=False):
        self.display = Display()
        (self.compositor, self.allocator, self.renderer, self.backend,
         self.subcompositor) = build_compositor(self.display, backend_type=BackendType.HEADLESS)
        self.layout = OutputLayout()
        self.scene = Scene()
        self.scene_layout = self.scene.attach_output_layout(self.layout)
        self.desktop = SceneTree.create(self.scene.tree)
        self.lock_tree = SceneTree.create(self.scene.tree)
        self.outputs = {}  # name -> dict(output, scene_output, desktop, blanket, x, y, w, h)
        self.listeners = []
        self.lock = None         # the live lock (a client holds it)
        self.locked = False      # the session is locked (live or abandoned)
        self.surfaces = {}       # output name -> (lock surface, scene tree or None)
        self.pointer_focus = None
        self.touch_focus = None
        self.screencopy = ScreencopyManagerV1(self.display)
        self.xdg_output = XdgOutputManagerV1(self.display, self.layout)

        self.seat = Seat(self.display, "seat0")
        self.seat.set_capabilities(WlSeat.capability.pointer | WlSeat.capability.keyboard | WlSeat.capability.touch)
        self.keyboard = self.make_keyboard()

        if without_lock:
            # A compositor without the protocol, as Debian 12's are: the locker must refuse.
            self.lock_manager = None
        else:
            self.lock_manager = SessionLockManagerV1(self.display)
        # pywlroots 0.17.0 declares struct wlr_session_lock_v1 8 bytes shorter than the
        # wlroots it bundles (a private field), so its wrapper refuses the lock: the signal is
        # taken raw and the lock's own signals by their offsets (resource, surfaces, then
        # new_surface, unlock, destroy), which the short declaration gets right.
        if self.lock_manager:
            self.on(Signal(ptr=ffi.addressof(self.lock_manager._ptr.events.new_lock)), self.new_lock)
        self.on(self.backend.new_output_event, self.new_output)

        os.environ["XDG_RUNTIME_DIR"] = runtime
        self.socket_name = self.display.add_socket("wayland-puff")
        os.chmod(os.path.join(runtime, "wayland-puff"), 0o666)
        if not self.backend.start():
            raise SystemExit("cannot start the headless backend")
        for width, height, scale in sizes:
            self.next_scale = scale
            lib.wlr_headless_add_output(self.backend._ptr, width, height)
        self.next_scale = 1

        self.control_path = os.path.join(runtime, "control")
        self.control = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.control.bind(self.control_path)
        self.control.listen(8)
        # Kept: pywayland frees the callback's handle with the loop object.
        self.loop = self.display.get_event_loop()
        self.control_source = self.loop.add_fd(self.control.fileno(), self.accept, EventLoop.FdMask.WL_EVENT_READABLE, None)

    def on(self, signal, callback):
        listener = Listener(callback)
        signal.add(listener)
        self.listeners.append(listener)
        return listener

    def make_keyboard(self):
        """A keyboard device of the compositor's own (headless has none) with a US keymap,
        so clients get a real keymap and real key events through the seat."""
        keyboard = ffi.new("struct wlr_keyboard *")
        self.keyboard_memory = keyboard
        for signal in (keyboard.events.key, keyboard.events.modifiers, keyboard.events.keymap,
                       keyboard.events.repeat_info, keyboard.base.events.destroy):
            links = ffi.addressof(signal, "listener_list")
            links.prev = links
            links.next = links
        keyboard.base.type = lib.WLR_INPUT_DEVICE_KEYBOARD
        keyboard.keymap_fd = -1
        # Built by the libxkbcommon wlroots itself uses (the wheel bundles a copy; the xkbcommon
        # module's functions reach another copy, whose keymaps crash this one): default rules, "us".
        import ctypes
        import glob
        import wlroots
        bundled = glob.glob(os.path.join(os.path.dirname(wlroots.__file__), "..", "pywlroots.libs", "libxkbcommon-*.so*"))
        xkbcommon = ctypes.CDLL(bundled[0]) if bundled else ctypes.CDLL("libxkbcommon.so.0")
        xkbcommon.xkb_context_new.restype = ctypes.c_void_p
        xkbcommon.xkb_keymap_new_from_names.restype = ctypes.c_void_p
        xkbcommon.xkb_keymap_new_from_names.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
        context = xkbcommon.xkb_context_new(0)
        keymap = xkbcommon.xkb_keymap_new_from_names(context, None, 0)
        if not keymap:
            raise SystemExit("cannot build a keymap")
        lib.wlr_keyboard_set_keymap(keyboard, ffi.cast("struct xkb_keymap *", keymap))
        # What clients are told to repeat a held key at (wl_keyboard.repeat_info): 25 a second
        # after 300 ms.
        lib.wlr_keyboard_set_repeat_info(keyboard, 25, 300)
        wrapped = Keyboard(keyboard)
        self.seat.set_keyboard(wrapped)
        return wrapped

    # Outputs

    def new_output(self, listener, output):
        output.init_render(self.allocator, self.renderer)
        output.enable()
        # A HiDPI output (WIDTHxHEIGHT@SCALE): its layout size, and its lock surface's, is the
        # pixel size divided by the scale; clients learn the scale from wl_output.
        lib.wlr_output_set_scale(output._ptr, float(getattr(self, "next_scale", 1)))
        output.commit()
        # Side by side from the left, at fixed places: removing one moves no other (add_auto
        # would lay them out again, away from the scene nodes placed for them).
        x = max((entry["x"] + entry["w"] for entry in self.outputs.values()), default=0)
        layout_output = self.layout.add(output, x, 0)
        scene_output = SceneOutput.create(self.scene, output)
        self.scene_layout.add_output(layout_output, scene_output)
        box = self.layout.get_box(output)
        width, height = output.effective_resolution()
        desktop = SceneRect(self.desktop, width, height, colour(1.0, 0.0, 1.0))
        desktop.node.set_position(box.x, box.y)
        blanket = SceneRect(self.lock_tree, width, height, colour(0.0, 0.0, 0.0))
        blanket.node.set_position(box.x, box.y)
        blanket.node.set_enabled(enabled=self.locked)
        entry = dict(output=output, scene_output=scene_output, desktop=desktop, blanket=blanket,
                     x=box.x, y=box.y, w=width, h=height, listeners=[])
        self.outputs[output.name] = entry
        entry["listeners"].append(self.on(output.frame_event, lambda l, d, name=output.name: self.frame(name)))
        entry["listeners"].append(self.on(output.destroy_event, lambda l, d, name=output.name: self.output_gone(name)))

    def frame(self, name):
        entry = self.outputs.get(name)
        if not entry:
            return
        entry["scene_output"].commit()
        entry["scene_output"].send_frame_done(Timespec.get_monotonic_time())

    def output_gone(self, name):
        entry = self.outputs.pop(name, None)
        if not entry:
            return
        entry["desktop"].node.destroy()
        entry["blanket"].node.destroy()
        for listener in entry["listeners"]:
            listener.remove()
            if listener in self.listeners:
                self.listeners.remove(listener)
        self.surfaces.pop(name, None)

    # The session lock

    def new_lock(self, listener, data):
        lock = ffi.cast("struct wlr_session_lock_v1 *", data)
        if self.lock is not None:
            # A live lock exists: refused (the client gets `finished`).
            lib.wlr_session_lock_v1_destroy(lock)
            return
        self.lock = lock
        self.locked = True
        for entry in self.outputs.values():
            entry["blanket"].node.set_enabled(enabled=True)
        base = ffi.cast("char *", data)
        signal = lambda offset, wrapper=None: Signal(ptr=ffi.cast("struct wl_signal *", base + offset), data_wrapper=wrapper)
        self.lock_signals = [signal(24), signal(40), signal(56)]
        self.lock_listeners = [
            self.on(self.lock_signals[0], self.new_lock_surface),
            self.on(self.lock_signals[1], self.unlocked),
            self.on(self.lock_signals[2], self.lock_destroyed),
        ]
        self.check_locked()

    def new_lock_surface(self, listener, data):
        # Raw as well: the wrapper of 0.17.0 looks for a map signal wlroots 0.17 moved to the surface.
        lock_surface = ffi.cast("struct wlr_session_lock_surface_v1 *", data)
        name = ffi.string(lock_surface.output.name).decode()
        entry = self.outputs.get(name)
        if not entry:
            return
        surface = Surface(lock_surface.surface)
        tree = SceneTree.subsurface_tree_create(self.lock_tree, surface)
        tree.node.set_position(entry["x"], entry["y"])
        self.surfaces[name] = [surface, tree, False]
        lib.wlr_session_lock_surface_v1_configure(lock_surface, entry["w"], entry["h"])

        def mapped(listener, data, name=name):
            record = self.surfaces.get(name)
            if record:
                record[2] = True
            self.focus_keyboard()
            self.check_locked()

        own = []

        def destroyed(listener, data, name=name):
            # wlroots asserts that nobody listens once a lock surface is gone.
            for each in own:
                each.remove()
                if each in self.listeners:
                    self.listeners.remove(each)
            record = self.surfaces.get(name)
            if record and record[0]._ptr == surface._ptr:
                self.surfaces.pop(name)
                record[1].node.destroy()
            if self.pointer_focus == name:
                self.pointer_focus = None

        own.append(self.on(surface.map_event, mapped))
        own.append(self.on(Signal(ptr=ffi.addressof(lock_surface.events.destroy)), destroyed))

    def check_locked(self):
        """`locked` once every output shows its lock surface (as sway does)."""
        if self.lock is None or getattr(self, "sent_locked", False):
            return
        if all(name in self.surfaces and self.surfaces[name][2] for name in self.outputs):
            lib.wlr_session_lock_v1_send_locked(self.lock)
            self.sent_locked = True

    def unlocked(self, listener, data):
        self.locked = False
        for entry in self.outputs.values():
            entry["blanket"].node.set_enabled(enabled=False)
        self.seat.keyboard_clear_focus()

    def lock_destroyed(self, listener, data):
        # Without unlock: the client died or gave up; the session stays locked.
        for listener in self.lock_listeners:
            listener.remove()
            if listener in self.listeners:
                self.listeners.remove(listener)
        self.lock = None
        self.sent_locked = False

    def focus_keyboard(self):
        for name in self.outputs:
            record = self.surfaces.get(name)
            if record and record[2]:
                self.seat.keyboard_notify_enter(record[0], self.keyboard)
                return

    # Input

    def surface_at(self, x, y):
        for name, entry in self.outputs.items():
            if entry["x"] <= x < entry["x"] + entry["w"] and entry["y"] <= y < entry["y"] + entry["h"]:
                record = self.surfaces.get(name)
                if record and record[2]:
                    return name, record[0], x - entry["x"], y - entry["y"]
                return None
        return None

    def pointer(self, x, y):
        found = self.surface_at(x, y)
        if not found:
            return False
        name, surface, sx, sy = found
        if self.pointer_focus != name:
            self.seat.pointer_notify_enter(surface, sx, sy)
            self.pointer_focus = name
        self.seat.pointer_notify_motion(now_ms(), sx, sy)
        self.seat.pointer_notify_frame()
        return True

    def button(self, pressed):
        lib.wlr_seat_pointer_notify_button(self.seat._ptr, now_ms(), BUTTON_LEFT,
                                           lib.WLR_BUTTON_PRESSED if pressed else lib.WLR_BUTTON_RELEASED)
        self.seat.pointer_notify_frame()

    def key(self, code):
        self.focus_keyboard()
        for state in (1, 0):
            lib.wlr_seat_keyboard_notify_key(self.seat._ptr, now_ms(), code, state)

    def command(self, line):
        words = line.split()
        if not words:
            return "error empty"
        verb, arguments = words[0], words[1:]
        if verb == "state":
            return "locked" if self.lock is not None and self.locked else "abandoned" if self.locked else "unlocked"
        if verb == "outputs":
            lines = []
            for name, entry in self.outputs.items():
                record = self.surfaces.get(name)
                lines.append(f"{name} {entry['x']} {entry['y']} {entry['w']} {entry['h']} "
                             + ("mapped" if record and record[2] else "none"))
            return ";".join(lines)
        if verb == "add-output":
            before = set(self.outputs)
            lib.wlr_headless_add_output(self.backend._ptr, int(arguments[0]), int(arguments[1]))
            added = set(self.outputs) - before
            return added.pop() if added else "error no output"
        if verb == "remove-output":
            entry = self.outputs.get(arguments[0])
            if not entry:
                return "error no such output"
            # Not declared by pywlroots; the bundled libwlroots has it (the monitor unplugged).
            import ctypes
            import glob
            import wlroots
            bundled = glob.glob(os.path.join(os.path.dirname(wlroots.__file__), "..", "pywlroots.libs", "libwlroots-*.so*"))
            destroy = ctypes.CDLL(bundled[0]).wlr_output_destroy
            destroy.argtypes = [ctypes.c_void_p]
            destroy(int(ffi.cast("uintptr_t", entry["output"]._ptr)))
            return "ok"
        if verb in ("down", "move", "up"):
            if verb != "up" and not self.pointer(float(arguments[0]), float(arguments[1])):
                return "error no lock surface there"
            if verb != "move":
                self.button(verb == "down")
            return "ok"
        if verb in ("touch-down", "touch-move", "touch-up"):
            if verb == "touch-up":
                lib.wlr_seat_touch_notify_up(self.seat._ptr, now_ms(), 0)
            else:
                found = self.surface_at(float(arguments[0]), float(arguments[1]))
                if not found:
                    return "error no lock surface there"
                name, surface, sx, sy = found
                if verb == "touch-down":
                    self.touch_focus = name
                    self.seat.touch_notify_down(surface, now_ms(), 0, sx, sy)
                else:
                    self.seat.touch_notify_motion(now_ms(), 0, sx, sy)
            self.seat.touch_notify_frame()
            return "ok"
        if verb in ("drag", "touch-drag"):
            # A whole stroke: down at the first point, through the others, up at the last.
            points = [(float(arguments[i]), float(arguments[i + 1])) for i in range(0, len(arguments) - 1, 2)]
            for index, (x, y) in enumerate(points):
                if verb == "drag":
                    if not self.pointer(x, y):
                        return "error no lock surface there"
                    if index == 0:
                        self.button(True)
                else:
                    found = self.surface_at(x, y)
                    if not found:
                        return "error no lock surface there"
                    if index == 0:
                        self.seat.touch_notify_down(found[1], now_ms(), 0, found[2], found[3])
                    else:
                        self.seat.touch_notify_motion(now_ms(), 0, found[2], found[3])
                    self.seat.touch_notify_frame()
            if verb == "drag":
                self.button(False)
            else:
                lib.wlr_seat_touch_notify_up(self.seat._ptr, now_ms(), 0)
                self.seat.touch_notify_frame()
            return "ok"
        if verb == "type":
            for character in " ".join(arguments):
                if character not in KEYS:
                    return "error cannot type " + character
                self.key(KEYS[character])
            return "ok"
        if verb == "key":
            self.key(KEYS[arguments[0]])
            return "ok"
        if verb in ("keydown", "keyup"):
            # A key held down: Wayland sends the press once; the client repeats it.
            self.focus_keyboard()
            lib.wlr_seat_keyboard_notify_key(self.seat._ptr, now_ms(), KEYS[arguments[0]], 1 if verb == "keydown" else 0)
            return "ok"
        if verb == "quit":
            self.display.terminate()
            return "ok"
        return "error unknown command"

    def accept(self, fd, mask, data):
        connection, _ = self.control.accept()
        with connection:
            connection.settimeout(5)
            data = b""
            while not data.endswith(b"\n"):
                chunk = connection.recv(4096)
                if not chunk:
                    break
                data += chunk
            try:
                reply = self.command(data.decode().strip())
            except Exception as error:  # a bad command is answered, never fatal
                reply = f"error {error}"
            self.display.flush_clients()
            connection.sendall(reply.encode() + b"\n")
        return 0

    def run(self):
        print(f"ready {self.socket_name}", flush=True)
        self.display.run()


def main():
    arguments = sys.argv[1:]
    without_lock = "--without-session-lock" in arguments
    arguments = [argument for argument in arguments if argument != "--without-session-lock"]
    runtime = arguments[0]
    sizes = []
    for argument in arguments[1:]:
        size, _, scale = argument.partition("@")
        width, height = (int(part) for part in size.split("x"))
        sizes.append((width, height, int(scale or 1)))
    sizes = sizes or [(1280, 800, 1)]
    Compositor(runtime, sizes, without_lock).run()


if __name__ == "__main__":
    main()
