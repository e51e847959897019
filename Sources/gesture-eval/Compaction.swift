import PuffCore

/// `--compact`: every attempt of the workload table is also sent as puff-greeter sends it
/// (`GestureCompaction` within LightDM's answer budget) and the matcher's two verdicts are
/// compared; the wire sizes before and after are kept per row.
struct CompactionTally {
    var attempts = 0
    var agreed = 0
    var fullAccepted = 0
    var compactAccepted = 0
    var refused = 0
    var fullBytes: [Int] = []
    var compactBytes: [Int] = []
}

/// The budget puff-greeter compacts to (see its LightDMGreeter.answerBudget).
let compactionBudget = 1000
nonisolated(unsafe) var compareCompaction = false
nonisolated(unsafe) var compactionTallies: [String: CompactionTally] = [:]

func recordCompaction(_ template: GestureTemplate, _ attempt: Gesture, fullVerdict: Bool, label: String) {
    guard compareCompaction, attempt.resolution == nil else { return }
    var tally = compactionTallies[label] ?? CompactionTally()
    tally.attempts += 1
    tally.fullBytes.append(GestureWire.serialize(attempt).count)
    if fullVerdict { tally.fullAccepted += 1 }
    if let compacted = GestureCompaction.compact(attempt, budget: compactionBudget, discard: { _ in }) {
        tally.compactBytes.append(compacted.bytes)
        let verdict = GestureMatcher.verify(template, compacted.gesture).passed
        if verdict { tally.compactAccepted += 1 }
        if verdict == fullVerdict { tally.agreed += 1 }
    } else {
        tally.refused += 1
    }
    compactionTallies[label] = tally
}

func printCompaction(labels: [String]) {
    guard compareCompaction else { return }
    func percentile(_ values: [Int], _ p: Double) -> Int {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p))]
    }
    print("\nCompacted for the login screen (whole pixels, simplified, ≤ \(compactionBudget) bytes) vs the full drawing:")
    print("| workload | attempts | same verdict | accepted full / compacted | too long | full bytes median / max | compacted median / max |")
    print("|---|---|---|---|---|---|---|")
    for label in labels {
        guard let tally = compactionTallies[label] else { continue }
        print("| \(label) | \(tally.attempts) | \(tally.agreed) | \(tally.fullAccepted) / \(tally.compactAccepted) | \(tally.refused) | "
            + "\(percentile(tally.fullBytes, 0.5)) / \(percentile(tally.fullBytes, 1)) | "
            + "\(percentile(tally.compactBytes, 0.5)) / \(percentile(tally.compactBytes, 1)) |")
    }
}
