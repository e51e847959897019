import Glibc
import PuffClient
import PuffPlatform

/// The greeter's link to greetd (`--greetd`): greetd's IPC (greetd-ipc(7)) over the socket
/// `$GREETD_SOCK`, each message a native-endian 32-bit length and that many bytes of UTF-8
/// JSON. Requests: `create_session` {username}, `post_auth_message_response` {response?},
/// `start_session` {cmd, env}, `cancel_session`; replies: `success`, `error` {error_type,
/// description}, `auth_message` {auth_message_type: visible|secret|info|error, auth_message}.
/// Every auth message is answered, info and error ones with no response.
///
/// greetd runs PAM itself; this side only relays, as with LightDM. greetd 0.9 reads one message
/// into a 10,240-byte buffer and a NUL in an answer crashes its worker: answers are built in a
/// wiped buffer, a NUL is refused, and gestures are compacted to `answerBudget`.
final class GreetdConnection: GreeterDaemon {
    /// The longest answer sent: 10,240 bytes less the JSON around it, with a margin.
    let answerBudget = 10_000
    /// The largest reply read (greetd's are small; anything larger is a broken peer).
    static let replyLimit = 65_536

    private let socket: Int32
    /// The reply not yet handed to `next()`.
    private var pending: [String: String]?
    private var sessionOpen = false
    private(set) var isAuthenticated = false
    let users: [UserChoice]
    let sessions: (choices: [SessionChoice], defaultKey: String?)
    /// The command lines of the sessions, by key.
    private let commands: [String: (command: [String], type: String)]

    /// `sessionDirectories`: where the `.desktop` files of the sessions are, each with its type
    /// (`XDG_SESSION_TYPE`); by default Wayland's, then X11's.
    init(sessionDirectories: [(String, String)] = [("/usr/share/wayland-sessions", "wayland"), ("/usr/share/xsessions", "x11")])
        throws(GreeterError) {
        guard let path = getenv("GREETD_SOCK").flatMap({ String(validatingCString: $0) }), path.hasPrefix("/") else {
            throw GreeterError(description: "GREETD_SOCK is not set: greetd starts puff-greeter --greetd")
        }
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw GreeterError(description: "cannot create a socket (errno \(errno))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw GreeterError(description: "GREETD_SOCK is too long")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            let code = errno
            close(fd)
            throw GreeterError(description: "cannot connect to greetd at \(path) (errno \(code))")
        }
        socket = fd
        users = Self.accounts()
        var choices: [SessionChoice] = []
        var commands: [String: (command: [String], type: String)] = [:]
        for (directory, type) in sessionDirectories {
            for entry in Self.desktopEntries(directory) where commands[entry.key] == nil {
                choices.append(SessionChoice(key: entry.key, name: type == "x11" ? entry.name + " (X11)" : entry.name))
                commands[entry.key] = (entry.command, type)
            }
        }
        self.commands = commands
        sessions = (choices, choices.first?.key)
    }

    deinit { close(socket) }

    var selectedUserHint: String? { nil }

    var hostName: String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    // MARK: The conversation

    func authenticate(_ name: String) throws(GreeterError) {
        // A session left by an earlier try (a failure, the user going back) is ended first.
        if sessionOpen { cancel() }
        isAuthenticated = false
        try send(Self.object(["type": "create_session", "username": name]))
        sessionOpen = true
        pending = try receive()
    }

    func next() -> DaemonSignal {
        guard let reply = pending ?? (try? receive()) else {
            // greetd is gone or answered nonsense: nothing is authenticated.
            Report.warn("greetd closed the connection or sent a malformed reply")
            pending = ["type": "error", "error_type": "error", "description": "greetd did not answer"]
            return .message("The login service did not answer.", isError: true)
        }
        pending = nil
        switch reply["type"] {
        case "auth_message":
            let text = reply["auth_message"] ?? ""
            switch reply["auth_message_type"] {
            case "visible": return .prompt(text, secret: false)
            case "secret": return .prompt(text, secret: true)
            case let kind:
                // Info and error messages are answered with no response before the next one.
                do {
                    try send(Self.object(["type": "post_auth_message_response"]))
                    pending = try receive()
                } catch {
                    pending = ["type": "error", "error_type": "error", "description": error.description]
                }
                return .message(text, isError: kind == "error")
            }
        case "success":
            isAuthenticated = true
            return .complete
        default:
            // An error: the attempt is over (greetd's own wording of a PAM failure is not shown;
            // the module's message was).
            isAuthenticated = false
            if reply["error_type"] != "auth_error" {
                pending = ["type": "error", "error_type": "auth_error", "description": ""]
                return .message("greetd: \(reply["description"] ?? "an error")", isError: true)
            }
            cancel()
            return .complete
        }
    }

    func respond(_ answer: SecretBuffer) throws(GreeterError) {
        var frame: [UInt8] = []
        defer { Wipe.array(&frame) }
        frame.reserveCapacity(answer.count * 2 + 80)
        frame += Array(#"{"type":"post_auth_message_response","response":""#.utf8)
        let valid: Bool = answer.withUnsafeBytes { bytes in
            for byte in bytes {
                // greetd 0.9's worker crashes on a NUL in an answer.
                if byte == 0 { return false }
                Self.escape(byte, into: &frame)
            }
            return true
        }
        guard valid else { throw GreeterError(description: "an answer with a NUL byte is not sent to greetd") }
        frame += Array(#""}"#.utf8)
        guard frame.count <= 10_240 else { throw GreeterError(description: "the answer is too long for greetd") }
        try sendFrame(frame)
        pending = try receive()
    }

    func cancel() {
        guard sessionOpen else { return }
        sessionOpen = false
        pending = nil
        if (try? send(Self.object(["type": "cancel_session"]))) != nil { _ = try? receive() }
    }

    func startSession(_ key: String?) throws(GreeterError) {
        guard let key, let session = commands[key], !session.command.isEmpty else {
            throw GreeterError(description: "no session to start")
        }
        let command = "[" + session.command.map { Self.string($0) }.joined(separator: ",") + "]"
        let environment = "[" + [Self.string("XDG_SESSION_TYPE=\(session.type)"), Self.string("XDG_SESSION_DESKTOP=\(key)")]
            .joined(separator: ",") + "]"
        try sendFrame(Array(#"{"type":"start_session","cmd":\#(command),"env":\#(environment)}"#.utf8))
        let reply = try receive()
        guard reply["type"] == "success" else {
            throw GreeterError(description: reply["description"] ?? "greetd refused to start the session")
        }
    }

    /// greetd starts the session once the greeter exits.
    func waitToBeStopped() -> Never {
        close(socket)
        exit(0)
    }

    // MARK: The wire

    private func send(_ text: String) throws(GreeterError) {
        try sendFrame(Array(text.utf8))
    }

    private func sendFrame(_ body: [UInt8]) throws(GreeterError) {
        var length = UInt32(body.count)
        var message = withUnsafeBytes(of: &length) { Array($0) } + body
        defer { Wipe.array(&message) }
        var sent = 0
        while sent < message.count {
            let wrote = message.withUnsafeBytes { raw -> Int in
                guard let base = raw.baseAddress else { return -1 }
                return Glibc.send(socket, base + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
            }
            if wrote < 0 && errno == EINTR { continue }
            guard wrote > 0 else { throw GreeterError(description: "cannot write to greetd (errno \(errno))") }
            sent += wrote
        }
    }

    private func readExactly(_ count: Int) throws(GreeterError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            let read = buffer.withUnsafeMutableBytes { raw -> Int in
                guard let base = raw.baseAddress else { return -1 }
                return Glibc.read(socket, base + got, raw.count - got)
            }
            if read < 0 && errno == EINTR { continue }
            guard read > 0 else { throw GreeterError(description: "greetd closed the connection") }
            got += read
        }
        return buffer
    }

    private func receive() throws(GreeterError) -> [String: String] {
        let header = try readExactly(4)
        let length = header.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
        guard length > 0, length <= UInt32(Self.replyLimit) else { throw GreeterError(description: "greetd sent a reply of \(length) bytes") }
        guard let object = FlatJSON.parse(try readExactly(Int(length))) else {
            throw GreeterError(description: "greetd sent a reply that is not a JSON object")
        }
        return object
    }

    // MARK: JSON

    static func escape(_ byte: UInt8, into output: inout [UInt8]) {
        switch byte {
        case UInt8(ascii: "\""): output += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
        case UInt8(ascii: "\\"): output += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
        case 0..<0x20:
            let hex = Array("0123456789abcdef".utf8)
            output += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
        default: output.append(byte)
        }
    }

    static func string(_ text: String) -> String {
        var output: [UInt8] = [UInt8(ascii: "\"")]
        for byte in text.utf8 { escape(byte, into: &output) }
        output.append(UInt8(ascii: "\""))
        return String(decoding: output, as: UTF8.self)
    }

    static func object(_ fields: KeyValuePairs<String, String>) -> String {
        "{" + fields.map { string($0.key) + ":" + string($0.value) }.joined(separator: ",") + "}"
    }

    // MARK: What is offered

    /// Accounts people log in to: uid 1000 to 59999 with a login shell.
    static func accounts() -> [UserChoice] {
        var found: [UserChoice] = []
        setpwent()
        defer { endpwent() }
        while let entry = getpwent() {
            let uid = entry.pointee.pw_uid
            guard uid >= 1000, uid < 60000, let name = String(validatingCString: entry.pointee.pw_name) else { continue }
            let shell = entry.pointee.pw_shell.flatMap { String(validatingCString: $0) } ?? ""
            guard !shell.hasSuffix("nologin"), !shell.hasSuffix("/false") else { continue }
            let gecos = entry.pointee.pw_gecos.flatMap { String(validatingCString: $0) }?
                .split(separator: ",", omittingEmptySubsequences: false).first.map(String.init) ?? ""
            found.append(UserChoice(name: name, displayName: gecos.isEmpty ? name : gecos))
            if found.count >= 200 { break }
        }
        return found.sorted { $0.name < $1.name }
    }

    /// The sessions in `directory`'s `.desktop` files: key (the file's name), Name=, Exec= split
    /// on spaces (field codes dropped); hidden and broken entries left out.
    static func desktopEntries(_ directory: String) -> [(key: String, name: String, command: [String])] {
        guard let listing = opendir(directory) else { return [] }
        defer { closedir(listing) }
        var entries: [(key: String, name: String, command: [String])] = []
        while let item = readdir(listing) {
            let file = withUnsafeBytes(of: item.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard file.hasSuffix(".desktop"), !file.hasPrefix("."), entries.count < 100 else { continue }
            guard let text = readSmall(directory + "/" + file) else { continue }
            var name = "", command: [String] = [], hidden = false
            for line in text.split(separator: "\n") {
                if line.hasPrefix("Name=") && name.isEmpty { name = String(line.dropFirst(5)) }
                if line.hasPrefix("Exec=") && command.isEmpty {
                    command = line.dropFirst(5).split(separator: " ").filter { !$0.hasPrefix("%") }.map(String.init)
                }
                if line == "NoDisplay=true" || line == "Hidden=true" { hidden = true }
            }
            guard !hidden, !name.isEmpty, !command.isEmpty else { continue }
            entries.append((String(file.dropLast(".desktop".count)), name, command))
        }
        return entries.sorted { $0.name < $1.name }
    }

    /// A small regular file's text (a `.desktop` entry): no symbolic link followed, 64 KiB at most.
    static func readSmall(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_size <= 65_536 else { return nil }
        var buffer = [UInt8](repeating: 0, count: Int(status.st_size))
        var got = 0
        while got < buffer.count {
            let read = buffer.withUnsafeMutableBytes { raw -> Int in
                guard let base = raw.baseAddress else { return -1 }
                return Glibc.read(fd, base + got, raw.count - got)
            }
            if read < 0 && errno == EINTR { continue }
            guard read > 0 else { break }
            got += read
        }
        return String(validating: buffer[0..<got], as: UTF8.self)
    }
}

/// The replies greetd sends: one JSON object of strings (and nulls, numbers, booleans, which
/// are skipped). Nested values are refused: greetd sends none.
enum FlatJSON {
    static func parse(_ bytes: [UInt8]) -> [String: String]? {
        var index = 0
        func skipSpace() { while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 } }
        func expect(_ byte: UInt8) -> Bool {
            skipSpace()
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }
        func string() -> String? {
            guard expect(UInt8(ascii: "\"")) else { return nil }
            var scalars = String.UnicodeScalarView()
            var raw: [UInt8] = []
            func flush() -> Bool {
                guard !raw.isEmpty else { return true }
                guard let text = String(validating: raw, as: UTF8.self) else { return false }
                scalars.append(contentsOf: text.unicodeScalars)
                raw = []
                return true
            }
            func hex4() -> UInt32? {
                guard index + 4 <= bytes.count else { return nil }
                let text = String(decoding: bytes[index..<index + 4], as: UTF8.self)
                index += 4
                return UInt32(text, radix: 16)
            }
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    guard flush() else { return nil }
                    return String(scalars)
                case UInt8(ascii: "\\"):
                    guard index < bytes.count, flush() else { return nil }
                    let escaped = bytes[index]
                    index += 1
                    let simple: [UInt8: UInt8] = [0x22: 0x22, 0x5C: 0x5C, 0x2F: 0x2F, 0x62: 0x08, 0x66: 0x0C, 0x6E: 0x0A, 0x72: 0x0D, 0x74: 0x09]
                    if let mapped = simple[escaped] {
                        scalars.append(Unicode.Scalar(mapped))
                    } else if escaped == UInt8(ascii: "u"), var code = hex4() {
                        if code >= 0xD800 && code < 0xDC00 {
                            guard expect(UInt8(ascii: "\\")), index < bytes.count, bytes[index] == UInt8(ascii: "u") else { return nil }
                            index += 1
                            guard let low = hex4(), low >= 0xDC00, low < 0xE000 else { return nil }
                            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let scalar = Unicode.Scalar(code) else { return nil }
                        scalars.append(scalar)
                    } else {
                        return nil
                    }
                case 0..<0x20:
                    return nil
                default:
                    raw.append(byte)
                }
            }
            return nil
        }
        guard expect(UInt8(ascii: "{")) else { return nil }
        var object: [String: String] = [:]
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
        } else {
            while true {
                guard let key = string(), expect(UInt8(ascii: ":")) else { return nil }
                skipSpace()
                guard index < bytes.count else { return nil }
                if bytes[index] == UInt8(ascii: "\"") {
                    guard let value = string() else { return nil }
                    object[key] = value
                } else {
                    // null, true, false, a number: skipped.
                    while index < bytes.count, !",} \t\r\n".utf8.contains(bytes[index]) {
                        guard !"{[\"".utf8.contains(bytes[index]) else { return nil }
                        index += 1
                    }
                }
                if expect(UInt8(ascii: ",")) { continue }
                guard expect(UInt8(ascii: "}")) else { return nil }
                break
            }
        }
        skipSpace()
        return index == bytes.count ? object : nil
    }
}
