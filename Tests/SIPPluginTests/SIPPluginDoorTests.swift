import Foundation
import Testing

/// `SIPPlugin.agent(for:)` is `package`: the plugin's own way to its user agents and the tests'
/// (issue 20: "nothing outside tests calls `agent(for:)`"). Every other target, the daemon and
/// the CLI included, reaches calls through the plugin's public call API, the one door a library
/// user has too. `package` alone would let any target of this package in, so the sources say it.
struct SIPPluginDoorTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test func noTargetButTheSIPPluginCallsAgentFor() throws {
        var callers: [String] = []
        var read = 0
        for top in ["Sources", "Plugins", "Benchmarks", "Fuzz"] {
            let files = FileManager.default.enumerator(atPath: Self.root.appendingPathComponent(top).path)
            // Bounded: the package has well under 10,000 files.
            while let file = files?.nextObject() as? String, read < 10_000 {
                guard file.hasSuffix(".swift"), !(top == "Plugins" && file.hasPrefix("SIPPlugin/")) else { continue }
                read += 1
                let text = try String(contentsOf: Self.root.appendingPathComponent("\(top)/\(file)"), encoding: .utf8)
                if text.contains("agent(for:") { callers.append("\(top)/\(file)") }
            }
        }
        #expect(read > 50, "the sources were not found below \(Self.root.path)")
        #expect(callers.isEmpty, "agent(for:) called outside the SIP plugin: \(callers)")
    }
}
