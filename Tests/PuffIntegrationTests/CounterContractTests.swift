import Foundation
import PuffCore
import PuffFleet
import PuffPlatform
import Testing

/// One body of tests run against every store and so every counter the engine drives: the
/// files store (the counter file), fleet mode online (the directory's Modify-Increment and the
/// local counter, a real slapd) and fleet mode offline (the local counter and the cached copy,
/// the same slapd stopped). What a login relies on must hold in each: a failure is counted
/// before the check and locks at `deny`; a locked user is refused unverified; `authsucc`'s
/// take-back removes one failure; a success clears what was counted before it; the
/// administrator's reset and lock go through the same store.
@Suite("Counter contract", .serialized)
struct CounterContractTests {
    static let config = "kdf_ops = 1\nkdf_mem_kib = 8\ndeny = 3\ndelays = 600\nmax_failures = 0\n"
    static let passcode = "604917", wrong = "111333"

    static func secret(_ text: String) throws -> SecureBytes {
        let bytes = Array(text.utf8)
        var out = try SecureBytes(count: bytes.count)
        out.withMutableBytes { destination in bytes.withUnsafeBytes { destination.copyMemory(from: $0) } }
        return out
    }

    static func options(_ fixture: Fixture) throws -> PuffOptions {
        try Sodium.initialize()
        return try Configuration.load(arguments: ["dir=\(fixture.etc)", "state_dir=\(fixture.state)", "conf=\(fixture.conf)"]).options
    }

    /// The counting rules, the same for every store: `store` holds `account` enrolled with
    /// `passcode` and no failures.
    static func countingContract<S: StoreBackend>(_ store: S, _ account: Account, label: String) throws {
        func attempt(_ text: String) throws -> (AttemptOutcome, CountedFailure?) {
            var counted: CountedFailure?
            let outcome = try store.attempt(try secret(text), for: try store.subject(of: account), counted: &counted)
            return (outcome, counted)
        }
        // Counted before the check, and reported with the failures in a row.
        let (first, counted) = try attempt(wrong)
        guard case .failure(1, .open, _) = first else { Issue.record("\(label): first wrong passcode: \(first)"); return }
        #expect(counted?.user == account.name, "\(label)")
        #expect(try store.subject(of: account).state.failures == 1, "\(label)")
        // authsucc's take-back: the failure is gone, once.
        #expect(try store.takeBack(try #require(counted)), "\(label)")
        #expect(try store.subject(of: account).state.failures == 0, "\(label)")
        // A success clears the failures counted before it and leaves no failure to take back.
        _ = try attempt(wrong)
        let (right, none) = try attempt(passcode)
        #expect(right == .success(rehashed: false) && none == nil, "\(label): \(right)")
        #expect(try store.subject(of: account).state.failures == 0, "\(label)")
        // `deny` failures lock; a locked user is refused without verifying, and nothing is counted.
        for index in 1...3 {
            let (outcome, _) = try attempt(wrong)
            guard case .failure(UInt32(index), let lock, _) = outcome else { Issue.record("\(label): failure \(index): \(outcome)"); return }
            #expect((lock == .open) == (index < 3), "\(label): failure \(index) left \(lock)")
        }
        let (refused, nothing) = try attempt(passcode)
        guard case .locked(.locked) = refused else { Issue.record("\(label): the right passcode while locked: \(refused)"); return }
        #expect(nothing == nil, "\(label)")
        #expect(try store.subject(of: account).state.failures == 3, "\(label): a refusal while locked counted")
    }

    /// The administrator's side, through the same store.
    static func administrationContract<S: StoreBackend>(_ store: S, _ account: Account, label: String) throws {
        #expect(try store.reset(of: account.name) != nil, "\(label)")
        #expect(try store.subject(of: account).state.failures == 0, "\(label)")
        #expect(try store.status(of: account).record?.passcode != nil, "\(label)")
        try store.requirePasscode(of: account.name)
        #expect(try store.status(of: account).tally.adminLock, "\(label)")
        #expect(try store.removeEnrollment(of: account.name), "\(label)")
        guard case .notEnrolled = try store.subject(of: account) else { Issue.record("\(label): still enrolled after remove"); return }
        #expect(try store.attempt(try secret(passcode), for: try store.subject(of: account)) == .notEnrolled, "\(label)")
        if !label.hasPrefix("fleet") { #expect(try store.reset(of: account.name) == nil, "\(label): a reset of nobody") }
    }

    @Test("the files store keeps the counting and administration contract")
    func filesStore() throws {
        let fixture = try Fixture(config: Self.config)
        let account = try #require(try Account.lookup(try TestUsers.ensure("puff-it-alice")))
        let store = FilesStore(options: try Self.options(fixture))
        try store.storePasscode(try Self.secret(Self.passcode), type: .digits6, for: account)
        try Self.countingContract(store, account, label: "files")
        try Self.administrationContract(store, account, label: "files")
    }

    @Test("fleet mode online and offline keeps the same contract, against a real slapd")
    func fleetStore() throws {
        let directory = try FleetDirectory()
        let name = try TestUsers.ensure("puff-it-alice")
        try directory.addUser(name)
        let host = try fleetHost(directory, name: "host1", key: newFleetKey(), extra: Self.config + "ldap_cache_ttl = 3600\n")
        let account = try #require(try Account.lookup(name))
        let store = FleetStore(FilesStore(options: try Self.options(host)))
        try store.storePasscode(try Self.secret(Self.passcode), type: .digits6, for: account)
        try Self.countingContract(store, account, label: "fleet online")
        #expect(try directory.failures(name) == 3, "the directory's own count")
        _ = try store.reset(of: account.name)
        // A login while online caches the record for offline logins.
        #expect(try store.attempt(try Self.secret(Self.passcode), for: try store.subject(of: account)) == .success(rehashed: false))
        directory.stop()
        // A fresh store (a new login) finds the directory out of reach and goes by the cache.
        let offline = FleetStore(FilesStore(options: try Self.options(host)))
        #expect(try offline.status(of: account).fleet?.unreachable != nil)
        try Self.countingContract(offline, account, label: "fleet offline")
        try directory.start()
        let online = FleetStore(FilesStore(options: try Self.options(host)))
        try Self.administrationContract(online, account, label: "fleet online")
    }
}
