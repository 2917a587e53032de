import ResiliencePolicyFile
import Testing

/// Garbled input never crashes the loader: it parses, or it fails with a located error.
struct GarbledPolicyTests {
    static let yamlTokens = [
        "levels:", "rules:", "extra-rules:", "backoff:", "-", " ", "  ", "\n", "\n  ", "[", "]", "{", "}", ":", ",",
        "&a", "*a", "!!str", "!!binary", "'", "\"", "#", "full", "none", "service: http", "on: shutdown",
        "do: [register]", "\t", "%YAML 1.2\n", "---\n", "...\n", "? ", "|", ">", "2s", "1e400", "é", "\u{0}",
    ]

    /// Parses and checks the outcome; returns whether it was rejected.
    @discardableResult
    func parseOrLocatedError(_ bytes: [UInt8]) -> Bool {
        let lines = bytes.count { $0 == UInt8(ascii: "\n") } + 1
        do {
            _ = try PolicyFile.parse(bytes, file: "garbled.yaml")
            return false
        } catch {
            #expect(error.file == "garbled.yaml")
            #expect((1...lines).contains(error.line), "\(error)")
            #expect(error.column >= 1)
            #expect(!error.message.isEmpty && !error.expected.isEmpty)
            return true
        }
    }

    @Test func randomBytes() {
        var rng = SeededGenerator(seed: 0xBAD)
        var rejected = 0
        for _ in 0..<300 {
            let bytes = (0..<Int.random(in: 0...200, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if parseOrLocatedError(bytes) { rejected += 1 }
        }
        #expect(rejected >= 290)
    }

    @Test func randomYAMLTokens() {
        var rng = SeededGenerator(seed: 0x5EED)
        for _ in 0..<500 {
            let text = (0..<Int.random(in: 1...40, using: &rng)).map { _ in rng.pick(Self.yamlTokens) }.joined()
            parseOrLocatedError(Array(text.utf8))
        }
    }

    @Test func truncatedDefaultPolicy() {
        let bytes = Array(PolicyFile.defaultYAML.utf8)
        #expect(bytes.count > 1000)
        for end in stride(from: 0, to: bytes.count, by: 41) {
            parseOrLocatedError(Array(bytes[..<end]))
        }
    }

    @Test func defaultPolicyWithOneByteFlipped() {
        var rng = SeededGenerator(seed: 42)
        let bytes = Array(PolicyFile.defaultYAML.utf8)
        for _ in 0..<150 {
            var copy = bytes
            copy[Int.random(in: 0..<copy.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
            parseOrLocatedError(copy)
        }
    }
}
