import Glibc

/// What every fuzz target shares: the invariant check that turns a wrong answer into a crash
/// libFuzzer records, and the replay driver a normal build uses instead of libFuzzer.
public enum Fuzz {
    /// Ends the process with `abort()` when `condition` is false, so libFuzzer (or a replay)
    /// reports the input. A fuzz target checks more than "did not crash": each one states
    /// what must hold for every input, such as a parse → serialize → parse round trip.
    public static func require(_ condition: Bool, _ message: @autoclosure () -> String,
                               file: StaticString = #fileID, line: UInt = #line) {
        guard !condition else { return }
        printError("fuzz invariant failed (\(file):\(line)): \(message())")
        abort()
    }

    /// Writes `text` and a newline to standard error.
    public static func printError(_ text: String) {
        let line = Array((text + "\n").utf8)
        _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    }

    /// The input libFuzzer passes, as a buffer (empty when `data` is null).
    public static func input(_ data: UnsafePointer<UInt8>?, _ size: Int) -> UnsafeBufferPointer<UInt8> {
        guard let data, size > 0 else { return UnsafeBufferPointer(start: nil, count: 0) }
        return UnsafeBufferPointer(start: data, count: size)
    }

    /// The replay driver of a normal (non-fuzzer) build: runs `testOne` on every file named on
    /// the command line, and on every regular file directly inside a named directory, then
    /// prints how many inputs ran. Exits 2 on an unreadable path. An input that breaks an
    /// invariant aborts, as it does under libFuzzer.
    public static func replay(_ testOne: (UnsafePointer<UInt8>?, Int) -> CInt) -> Never {
        var count = 0
        for path in CommandLine.arguments.dropFirst() {
            var info = stat()
            guard stat(path, &info) == 0 else {
                printError("\(path): cannot stat")
                exit(2)
            }
            let files = info.st_mode & S_IFMT == S_IFDIR ? regularFiles(in: path) : [path]
            for file in files {
                guard let bytes = readFile(file) else {
                    printError("\(file): cannot read")
                    exit(2)
                }
                _ = bytes.withUnsafeBufferPointer { testOne($0.baseAddress, $0.count) }
                count += 1
            }
        }
        print("replayed \(count) inputs")
        exit(0)
    }

    /// The regular files directly inside `directory`, sorted by name.
    public static func regularFiles(in directory: String) -> [String] {
        guard let stream = opendir(directory) else { return [] }
        defer { closedir(stream) }
        var files: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            var info = stat()
            let path = directory + "/" + name
            if name != ".", name != "..", lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG {
                files.append(path)
            }
        }
        return files.sorted()
    }

    /// The whole content of `path`, or nil when it cannot be read.
    public static func readFile(_ path: String) -> [UInt8]? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let got = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            if got == 0 { return ferror(file) == 0 ? bytes : nil }
            bytes += chunk[..<got]
        }
    }

    /// Writes `bytes` to `path` (for `--write-seeds`); exits 2 on failure.
    public static func writeFile(_ path: String, _ bytes: [UInt8]) {
        guard let file = fopen(path, "wb") else {
            printError("\(path): cannot create")
            exit(2)
        }
        let wrote = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        guard fclose(file) == 0, wrote == bytes.count else {
            printError("\(path): cannot write")
            exit(2)
        }
    }
}
