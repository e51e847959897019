#!/usr/bin/python3
"""A stand-in for greetd's daemon side, for puff-greeter --greetd's tests.

It speaks greetd's IPC as greetd-ipc(7) describes it (each message a native-endian 32-bit
length and UTF-8 JSON; requests create_session, post_auth_message_response, start_session,
cancel_session; replies success, error, auth_message) and runs a real PAM transaction
through libpam (pam_start_confdir, pam_authenticate, pam_acct_mgmt) for each session, as
greetd's worker does. It also applies greetd 0.9's limits: a message larger than 10,240
bytes, or an answer holding a NUL, ends the connection (greetd's worker fails on them).

Usage: greetd-server.py SOCKET SERVICE CONFDIR LOG
LOG gets one line per event: "request TYPE", "pam USER RESULT", "start CMD ENV".
Started sessions end the server (greetd would run the session).
"""
import ctypes
import ctypes.util
import json
import os
import queue
import socket
import struct
import sys
import threading

libpam = ctypes.CDLL(ctypes.util.find_library("pam"))
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.calloc.restype = ctypes.c_void_p
libc.calloc.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
libc.strdup.restype = ctypes.c_void_p
libc.strdup.argtypes = [ctypes.c_char_p]

PAM_PROMPT_ECHO_OFF, PAM_PROMPT_ECHO_ON, PAM_ERROR_MSG, PAM_TEXT_INFO = 1, 2, 3, 4
PAM_SUCCESS, PAM_CONV_ERR = 0, 19
BUFFER = 10240


class PamMessage(ctypes.Structure):
    _fields_ = [("msg_style", ctypes.c_int), ("msg", ctypes.c_char_p)]


class PamResponse(ctypes.Structure):
    _fields_ = [("resp", ctypes.c_void_p), ("resp_retcode", ctypes.c_int)]


CONV = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.POINTER(PamMessage)),
                        ctypes.POINTER(ctypes.POINTER(PamResponse)), ctypes.c_void_p)


class PamConv(ctypes.Structure):
    _fields_ = [("conv", CONV), ("appdata_ptr", ctypes.c_void_p)]


libpam.pam_start_confdir.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(PamConv), ctypes.c_char_p,
                                     ctypes.POINTER(ctypes.c_void_p)]
libpam.pam_authenticate.argtypes = [ctypes.c_void_p, ctypes.c_int]
libpam.pam_acct_mgmt.argtypes = [ctypes.c_void_p, ctypes.c_int]
libpam.pam_end.argtypes = [ctypes.c_void_p, ctypes.c_int]
libpam.pam_strerror.argtypes = [ctypes.c_void_p, ctypes.c_int]
libpam.pam_strerror.restype = ctypes.c_char_p


class Worker:
    """One PAM transaction in a thread of its own; its conversation waits for the greeter."""

    def __init__(self, service, confdir, user, log):
        self.events = queue.Queue()   # ("message", style, text) or ("done", ok, text)
        self.answers = queue.Queue()  # bytes, None (no response) or False (cancelled)
        self.log = log
        self.user = user
        self.thread = threading.Thread(target=self.run, args=(service, confdir, user), daemon=True)
        self.thread.start()

    def conversation(self, count, messages, responses, data):
        replies = ctypes.cast(libc.calloc(count, ctypes.sizeof(PamResponse)), ctypes.POINTER(PamResponse))
        for index in range(count):
            message = messages[index].contents
            self.events.put(("message", message.msg_style, (message.msg or b"").decode("utf-8", "replace")))
            answer = self.answers.get()
            if answer is False:
                return PAM_CONV_ERR
            if message.msg_style in (PAM_PROMPT_ECHO_OFF, PAM_PROMPT_ECHO_ON):
                replies[index].resp = libc.strdup(answer or b"")
        responses[0] = replies
        return PAM_SUCCESS

    def run(self, service, confdir, user):
        self.callback = CONV(self.conversation)
        conv = PamConv(self.callback, None)
        handle = ctypes.c_void_p()
        status = libpam.pam_start_confdir(service.encode(), user.encode(), ctypes.byref(conv), confdir.encode(),
                                          ctypes.byref(handle))
        if status == PAM_SUCCESS:
            status = libpam.pam_authenticate(handle, 0)
            if status == PAM_SUCCESS:
                status = libpam.pam_acct_mgmt(handle, 0)
        text = libpam.pam_strerror(handle, status).decode()
        libpam.pam_end(handle, status)
        self.log(f"pam {user} {text}")
        self.events.put(("done", status == PAM_SUCCESS, text))


def main():
    path, service, confdir, log_path = sys.argv[1:5]
    log_file = open(log_path, "a", buffering=1)

    def log(line):
        log_file.write(line + "\n")

    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    os.chmod(path, 0o666)
    server.listen(1)
    log("ready")
    connection, _ = server.accept()

    def read_exactly(count):
        data = b""
        while len(data) < count:
            chunk = connection.recv(count - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return data

    def send(obj):
        body = json.dumps(obj).encode()
        connection.sendall(struct.pack("=I", len(body)) + body)

    worker = None
    authenticated = False

    def reply_from(event):
        nonlocal authenticated, worker
        if event[0] == "message":
            kind = {PAM_PROMPT_ECHO_OFF: "secret", PAM_PROMPT_ECHO_ON: "visible", PAM_ERROR_MSG: "error",
                    PAM_TEXT_INFO: "info"}.get(event[1], "error")
            send({"type": "auth_message", "auth_message_type": kind, "auth_message": event[2]})
        elif event[1]:
            authenticated = True
            send({"type": "success"})
        else:
            worker = None
            send({"type": "error", "error_type": "auth_error", "description": event[2]})

    while True:
        try:
            length = struct.unpack("=I", read_exactly(4))[0]
            if length > BUFFER:
                log(f"too long {length}")
                return
            raw = read_exactly(length)
        except EOFError:
            log("greeter gone")
            return
        if b"\x00" in raw:
            log("nul in message")
            return
        request = json.loads(raw.decode("utf-8"))
        kind = request.get("type")
        log(f"request {kind}")
        if kind == "create_session":
            if worker is not None:
                send({"type": "error", "error_type": "error", "description": "a session is already being configured"})
                continue
            authenticated = False
            worker = Worker(service, confdir, request["username"], log)
            reply_from(worker.events.get())
        elif kind == "post_auth_message_response":
            if worker is None or authenticated:
                send({"type": "error", "error_type": "error", "description": "no authentication in progress"})
                continue
            response = request.get("response")
            worker.answers.put(response.encode() if response is not None else None)
            reply_from(worker.events.get())
        elif kind == "cancel_session":
            if worker is not None and not authenticated:
                worker.answers.put(False)
                worker.events.get()
            worker = None
            authenticated = False
            send({"type": "success"})
        elif kind == "start_session":
            if not authenticated:
                send({"type": "error", "error_type": "error", "description": "session not authenticated"})
                continue
            log(f"start {json.dumps(request.get('cmd'))} {json.dumps(request.get('env'))} user={worker.user}")
            send({"type": "success"})
        else:
            send({"type": "error", "error_type": "error", "description": "unknown request"})


if __name__ == "__main__":
    main()
