import Foundation

/// The Swift code blocks of the documentation and their compiled copies in the test suites.
///
/// A copy is a region of a test source between `// doc:begin PATH` and `// doc:end`, where PATH
/// is the document, relative to the package root. The region stands for a block after two
/// rewrites: lines ending in `// doc:hidden` are dropped (a wrapper that lets top-level
/// statements or a member compile inside a function or a type, or a line the page leaves out),
/// and each line inside such hidden wrappers (a hidden line ending in `{` opens one, a hidden
/// line starting with `}` closes it) loses their indentation, 4 spaces each. A block preceded by
/// the line `<!-- doc:not-compiled: REASON -->` is exempt (a fragment of another language's file).
///
/// Invariants: every block is read, and every region is matched against the blocks of its own
/// document only; both are bounded by the files' lengths.
enum DocBlocks {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    struct Block: Hashable {
        var document: String
        var line: Int
        var text: String
        var exempt: Bool
        /// Where the block is: the document, or the test source of a copy.
        var source: String
    }

    /// README.md and every DocC article of `Sources` and `Plugins`, as paths from the root.
    static func documents() -> [String] {
        var paths = ["README.md"]
        for top in ["Sources", "Plugins"] {
            let files = FileManager.default.enumerator(atPath: root.appendingPathComponent(top).path)
            while let file = files?.nextObject() as? String {
                if file.hasSuffix(".md") && file.contains(".docc/") { paths.append("\(top)/\(file)") }
            }
        }
        return paths.sorted()
    }

    /// The ```swift blocks of one document, each without its fences.
    static func blocks(of document: String) throws -> [Block] {
        let lines = try String(contentsOf: root.appendingPathComponent(document), encoding: .utf8)
            .components(separatedBy: "\n")
        var blocks: [Block] = []
        var index = 0
        while index < lines.count {
            guard lines[index] == "```swift" else {
                index += 1
                continue
            }
            let exempt = index > 0 && lines[index - 1].hasPrefix("<!-- doc:not-compiled:")
            let start = index + 1
            var end = start
            while end < lines.count && lines[end] != "```" { end += 1 }
            blocks.append(
                Block(
                    document: document, line: start, text: lines[start..<min(end, lines.count)].joined(separator: "\n"),
                    exempt: exempt, source: "\(document):\(start)"))
            index = end + 1
        }
        return blocks
    }

    /// Every `doc:begin` region of the test sources, rewritten as the block it stands for.
    static func copies() throws -> [Block] {
        var copies: [Block] = []
        let tests = root.appendingPathComponent("Tests")
        let files = FileManager.default.enumerator(atPath: tests.path)
        while let file = files?.nextObject() as? String {
            guard file.hasSuffix(".swift") else { continue }
            let text = try String(contentsOf: tests.appendingPathComponent(file), encoding: .utf8)
            copies += regions(in: text.components(separatedBy: "\n"), file: "Tests/\(file)")
        }
        return copies
    }

    static func regions(in lines: [String], file: String) -> [Block] {
        var found: [Block] = []
        var index = 0
        while index < lines.count {
            let words = lines[index].split(separator: " ").map(String.init)
            guard words.count == 3, words[0] == "//", words[1] == "doc:begin" else {
                index += 1
                continue
            }
            var body: [String] = []
            var wrappers = 0
            index += 1
            while index < lines.count && lines[index] != "// doc:end" {
                let line = lines[index]
                index += 1
                guard line.hasSuffix("// doc:hidden") else {
                    body.append(dedent(line, by: 4 * wrappers))
                    continue
                }
                let code = line.dropLast("// doc:hidden".count).trimmingCharacters(in: .whitespaces)
                if code.hasPrefix("}") { wrappers = max(0, wrappers - 1) }
                if code.hasSuffix("{") { wrappers += 1 }
            }
            found.append(
                Block(document: words[2], line: 0, text: body.joined(separator: "\n"), exempt: false, source: file))
        }
        return found
    }

    static func dedent(_ line: String, by count: Int) -> String {
        String(line.dropFirst(min(count, line.prefix { $0 == " " }.count)))
    }
}
