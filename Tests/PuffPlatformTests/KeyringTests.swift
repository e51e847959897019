import Glibc
import PuffCore
import PuffPlatform
import Testing

@Suite("Keyring copy")
struct KeyringCopyTests {
    init() throws { try Sodium.initialize() }

    private func options(_ scratch: borrowing ScratchDirectory, keyring: Bool = true) -> PuffOptions {
        var options = PuffOptions()
        options.recordDirectory = scratch("etc")
        options.stateDirectory = scratch("state")
        options.kdf = Argon2Parameters(memoryKiB: 8, iterations: 1)
        options.keyring = keyring
        return options
    }

    private func root() throws -> Account { try #require(try Account.lookup("root")) }

    private func password(_ release: consuming KeyringRelease) throws -> String? {
        switch release {
        case .password(let bytes): return bytes.withBytes { String(decoding: $0, as: UTF8.self) }
        default: return nil
        }
    }

    @Test("captured without the passcode, opened only with it; a new passcode drops the copy")
    func captureAndRelease() throws {
        let scratch = try ScratchDirectory()
        let authenticator = FilesStore(options: options(scratch))
        let account = try root()
        try authenticator.storePasscode(try secret("604917"), type: .digits6, for: account)
        let record = try #require(try RecordStore(directory: scratch("etc")).load(account))
        let lock = try #require(record.passcode?.keyring)
        #expect(lock.cost == Argon2Parameters(memoryKiB: 8, iterations: 1))

        #expect(try authenticator.captureKeyring(try secret("Sys-Pass-4217"), for: account) == .kept)
        let file = try #require(try KeyringStore(directory: scratch("etc"), session: StoreSession()).copy(of: account))
        #expect(file.sealedTo == String(lock.publicKey))
        #expect(!String(decoding: file.encoded(), as: UTF8.self).contains("Sys-Pass-4217"))

        #expect(try password(authenticator.releaseKeyring(try secret("604917"), for: account)) == "Sys-Pass-4217")
        // Another passcode derives another key pair: the record is then not this passcode's
        // (the module only calls this after the passcode verified), and nothing is opened.
        #expect(throws: StoreError.self) { _ = try authenticator.releaseKeyring(try secret("111111"), for: account) }

        // The passcode changed: the copy sealed to the old key pair is gone.
        try authenticator.storePasscode(try secret("583920"), type: .digits6, for: account)
        #expect(try KeyringStore(directory: scratch("etc"), session: StoreSession()).copy(of: account) == nil)
        #expect(try password(authenticator.releaseKeyring(try secret("583920"), for: account)) == nil)
    }

    @Test("a record without a key pair keeps nothing until a passcode success makes one")
    func keyPairAddedAtLogin() throws {
        let scratch = try ScratchDirectory()
        let account = try root()
        try FilesStore(options: options(scratch, keyring: false)).storePasscode(try secret("604917"), type: .digits6, for: account)
        let authenticator = FilesStore(options: options(scratch))
        #expect(try authenticator.captureKeyring(try secret("Sys-Pass-4217"), for: account) == .noKeyPair)
        guard case .keyPairAdded = try authenticator.releaseKeyring(try secret("604917"), for: account) else {
            Issue.record("no key pair was added")
            return
        }
        #expect(try authenticator.captureKeyring(try secret("Sys-Pass-4217"), for: account) == .kept)
        #expect(try password(authenticator.releaseKeyring(try secret("604917"), for: account)) == "Sys-Pass-4217")
    }

    @Test("the copy file is read with the store's rules: group-readable, symlinked or another user's is refused")
    func trustedFileRules() throws {
        let scratch = try ScratchDirectory()
        let authenticator = FilesStore(options: options(scratch))
        let account = try root()
        try authenticator.storePasscode(try secret("604917"), type: .digits6, for: account)
        #expect(try authenticator.captureKeyring(try secret("Sys-Pass-4217"), for: account) == .kept)
        let path = scratch("etc") + "/keyring/root"
        chmod(path, 0o640)
        #expect(throws: StoreError.self) { _ = try authenticator.releaseKeyring(try secret("604917"), for: account) }
        chmod(path, 0o600)
        #expect(try password(authenticator.releaseKeyring(try secret("604917"), for: account)) == "Sys-Pass-4217")
        rename(path, path + ".real")
        symlink(path + ".real", path)
        #expect(throws: StoreError.self) { _ = try authenticator.releaseKeyring(try secret("604917"), for: account) }
        unlink(path)
        // A copy that names another uid.
        var other = try KeyringCopyFile.decode(try #require(readAll(path + ".real")))
        other.uid = 1
        try makeFile(path, other.encoded())
        #expect(throws: StoreError.wrongOwner(path: path)) { _ = try authenticator.releaseKeyring(try secret("604917"), for: account) }
    }
}

private func readAll(_ path: String) -> [UInt8]? {
    guard let file = fopen(path, "rb") else { return nil }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = fread(&buffer, 1, buffer.count, file)
        if count == 0 { break }
        bytes += buffer[0..<count]
    }
    return bytes
}
