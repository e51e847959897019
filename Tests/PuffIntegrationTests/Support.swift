import Foundation
import Testing

/// PAM return codes as Linux-PAM defines them (pam/_pam_types.h).
enum PAMCode {
    static let success: Int32 = 0
    static let serviceError: Int32 = 3
    static let systemError: Int32 = 4
    static let authError: Int32 = 7
    static let authInfoUnavailable: Int32 = 9
    static let conversationError: Int32 = 19
    static let ignore: Int32 = 25
}

/// Where the built artefacts are: `make test` exports PUFF_MODULE and PUFF_BIN; a bare
/// `swift test` falls back to the usual build locations.
enum Artefacts {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    static var module: String {
        ProcessInfo.processInfo.environment["PUFF_MODULE"] ?? repository.appendingPathComponent("build/pam_puff.so").path
    }
    static var binaries: String {
        ProcessInfo.processInfo.environment["PUFF_BIN"] ?? repository.appendingPathComponent(".build/debug").path
    }
    static var harness: String { binaries + "/puff-pam-harness" }
    static var enroll: String { binaries + "/puff-enroll" }
}

/// What a finished process left.
struct Run {
    var status: Int32
    var output: String
    var errors: String
    var lines: [String] { output.split(separator: "\n").map(String.init) }
}

/// Runs a program to completion, feeding `input` on stdin.
@discardableResult
func run(_ program: String, _ arguments: [String], input: String? = nil) throws -> Run {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: program)
    process.arguments = arguments
    let out = Pipe(), err = Pipe(), inPipe = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = inPipe
    try process.run()
    if let input { inPipe.fileHandleForWriting.write(Data(input.utf8)) }
    try inPipe.fileHandleForWriting.close()
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    let errData = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return Run(status: process.terminationStatus, output: String(decoding: outData, as: UTF8.self),
               errors: String(decoding: errData, as: UTF8.self))
}

/// A throwaway Puff installation: a record directory, a state directory and a PAM service
/// directory in a fresh temp dir, with the minimum argon2id cost so tests are fast.
final class Fixture {
    let root: String
    var etc: String { root + "/etc" }
    var state: String { root + "/state" }
    var pamDirectory: String { root + "/pam.d" }
    var conf: String { etc + "/puff.conf" }

    init(config: String = "kdf_ops = 1\nkdf_mem_kib = 8\n", moduleArguments: String = "") throws {
        var template = Array("/tmp/puff-it-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw CocoaError(.fileWriteUnknown) }
        root = String(cString: made)
        for directory in [etc, state, pamDirectory] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        }
        chmod(root, 0o755)
        try write(conf, config, mode: 0o600)
        try service(moduleArguments)
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    /// Writes the `puff-test` service file with the module by absolute path.
    func service(_ extra: String, name: String = "puff-test", control: String = "required") throws {
        let line = "auth \(control) \(Artefacts.module) dir=\(etc) state_dir=\(state) conf=\(conf) nodelay \(extra)\n"
            + "account required \(Artefacts.module)\n"
        try write(pamDirectory + "/" + name, line, mode: 0o644)
    }

    func write(_ path: String, _ text: String, mode: Int) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, mode_t(mode))
    }

    var storeArguments: [String] { ["--dir", etc, "--state-dir", state, "--conf", conf] }

    /// Enrolls through the real `puff-enroll --stdin`.
    @discardableResult
    func enroll(_ user: String, _ passcode: String, type: String = "digits6", extra: [String] = []) throws -> Run {
        try run(Artefacts.enroll, ["passcode", "--user", user, "--type", type, "--stdin"] + extra + storeArguments,
                input: passcode + "\n")
    }

    /// One `pam_authenticate` through real libpam with a scripted conversation.
    func authenticate(_ user: String, replies: [String] = [], extra: [String] = [], service: String = "puff-test") throws -> Run {
        var arguments = ["--confdir", pamDirectory, "--service", service, "--user", user]
        for reply in replies { arguments += ["--reply", reply] }
        return try run(Artefacts.harness, arguments + extra)
    }

    /// `puff-enroll status --json --user U`, parsed.
    func status(_ user: String) throws -> [String: Any] {
        let result = try run(Artefacts.enroll, ["status", "--json", "--user", user] + storeArguments)
        let parsed = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [[String: Any]]
        return try #require(parsed?.first, "status output: \(result.output) \(result.errors)")
    }

    func failures(_ user: String) throws -> Int {
        try #require(try status(user)["failures"] as? Int)
    }
}

/// Ordinary accounts for the tests (CI runs as root; they are created once and reused).
enum TestUsers {
    static func ensure(_ name: String) throws -> String {
        if getpwnam(name) == nil {
            let result = try run("/usr/sbin/useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name])
            guard result.status == 0 || getpwnam(name) != nil else {
                throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "useradd \(name): \(result.errors)"])
            }
        }
        return name
    }
}
