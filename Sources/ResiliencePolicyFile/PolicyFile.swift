internal import Foundation
public import ResilienceCore
public import ResilienceRules
public import Yams

/// A parsed policy file: the policy, plus the services `netres policy explain` should show.
public struct PolicyDocument: Hashable, Sendable {
    public var policy: Policy
    /// Services listed under `services:`; empty when the file lists none.
    public var services: [ClientService]

    public init(policy: Policy, services: [ClientService] = []) {
        self.policy = policy
        self.services = services
    }
}

/// Loads YAML policy files into a `Policy`, keeping line and column for every error.
///
/// Invariant: never traps on any input; every rejection is a ``PolicyFileError`` with a location.
/// Keys a file omits keep their `Policy/default` values; `levels` and `rules` replace the default
/// table and rule list, `extra-rules` are appended to the rules.
public enum PolicyFile {
    /// Reads and parses the file at `path`.
    /// - Throws: ``PolicyFileError`` (`unreadable` when the file cannot be read).
    public static func load(path: String) throws(PolicyFileError) -> PolicyDocument {
        try parse(try readText(path: path), file: path)
    }

    /// Policy files are small; anything larger (or endless, like /dev/zero) is refused unread.
    static let maximumSize = 1 << 20

    /// Parses raw bytes, which must be UTF-8.
    /// - Parameters:
    ///   - bytes: the file's contents.
    ///   - file: the name errors report.
    public static func parse(_ bytes: [UInt8], file: String) throws(PolicyFileError) -> PolicyDocument {
        try parse(try decode(bytes, file: file), file: file)
    }

    /// The bytes as text, or a located `not-utf8` error.
    static func decode(_ bytes: [UInt8], file: String) throws(PolicyFileError) -> String {
        if let (line, column) = firstInvalidUTF8(in: bytes) {
            throw PolicyFileError(
                .notUTF8, file: file, line: line, column: column, message: "the file is not valid UTF-8",
                expected: "UTF-8 text", hint: "convert it, e.g. iconv -t UTF-8")
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Composes YAML text into a node tree (nil for an empty document), with located syntax errors.
    ///
    /// Refuses the line breaks YAML counts but editors and `\n`-based tools do not (a CR without
    /// LF, NEL, LINE SEPARATOR, PARAGRAPH SEPARATOR): after one, libyaml's line numbers would
    /// no longer match the file, and every later error would point at the wrong line.
    public static func compose(_ text: String, file: String) throws(PolicyFileError) -> Node? {
        if let (line, column, name) = firstYAMLOnlyLineBreak(in: text) {
            throw PolicyFileError(
                .syntax, file: file, line: line, column: column, message: "\(name) (a line break only YAML counts)",
                expected: "LF or CRLF line ends", hint: "remove it, or convert the file, e.g. dos2unix -c mac")
        }
        do {
            return try Yams.compose(yaml: text)
        } catch {
            throw syntaxError(error, text: text, file: file)
        }
    }

    /// Reads a small UTF-8 file (at most 1 MiB), with the same errors as ``load(path:)``.
    public static func readText(path: String) throws(PolicyFileError) -> String {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
            let handle = FileHandle(forReadingAtPath: path),
            // nil (not an error) means end of file: an empty file reads as no bytes.
            let data = try? handle.read(upToCount: maximumSize + 1) ?? Data()
        else {
            throw PolicyFileError(
                .unreadable, file: path, line: 1, column: 1, message: "cannot read the file",
                expected: "a readable YAML file")
        }
        try? handle.close()
        guard data.count <= maximumSize else {
            throw PolicyFileError(
                .invalidValue, file: path, line: 1, column: 1, message: "the file is larger than 1 MiB",
                expected: "a file of at most 1 MiB")
        }
        return try decode(Array(data), file: path)
    }

    /// Parses YAML text.
    public static func parse(_ text: String, file: String) throws(PolicyFileError) -> PolicyDocument {
        guard let node = try compose(text, file: file) else {
            throw PolicyFileError(
                .empty, file: file, line: 1, column: 1, message: "the file has no YAML document",
                expected: "a mapping with keys \(LocatedYAML.topKeys.joined(separator: ", "))",
                hint: "start from `netres policy default`")
        }
        return try LocatedYAML(file: file).document(node)
    }

    /// The commented default policy shipped with the package (what `netres policy default` prints);
    /// empty when the resource bundle is not installed next to the executable.
    ///
    /// Looks the bundle up itself rather than through `Bundle.module`, whose accessor traps when the
    /// bundle is missing: an installed `netres` without its bundle must fail politely.
    public static var defaultYAML: String {
        let bundle = "swift-net-resilience_ResiliencePolicyFile.resources"
        let directories = [
            Bundle.main.bundleURL, Bundle.main.executableURL?.deletingLastPathComponent(), Bundle.main.resourceURL,
        ]
        for directory in directories.compactMap(\.self) {
            for candidate in [directory.appendingPathComponent(bundle), directory] {
                let path = candidate.appendingPathComponent("default-policy.yaml").path
                if let data = FileManager.default.contents(atPath: path) {
                    return String(decoding: data, as: UTF8.self)
                }
            }
        }
        return ""
    }

    /// Line and column (1-based, column in bytes) of the first byte that is not UTF-8, or nil.
    static func firstInvalidUTF8(in bytes: [UInt8]) -> (Int, Int)? {
        var iterator = bytes.makeIterator()
        var parser = Unicode.UTF8.ForwardParser()
        var line = 1
        var column = 1
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let encoded):
                if encoded.count == 1 && encoded.first == UInt8(ascii: "\n") {
                    line += 1
                    column = 1
                } else {
                    column += 1
                }
            case .emptyInput:
                return nil
            case .error:
                return (line, column)
            }
        }
    }

    /// Line and column (1-based, by `\n` lines and Unicode scalars) and name of the first line break
    /// that YAML counts but `\n` does not, or nil.
    static func firstYAMLOnlyLineBreak(in text: String) -> (Int, Int, String)? {
        var line = 1
        var column = 1
        var previousWasCR = false
        for scalar in text.unicodeScalars {
            if previousWasCR && scalar != "\n" { return (line, column - 1, "a carriage return without a line feed") }
            previousWasCR = scalar == "\r"
            switch scalar {
            case "\n":
                line += 1
                column = 1
                continue
            case "\u{85}": return (line, column, "NEXT LINE (U+0085)")
            case "\u{2028}": return (line, column, "LINE SEPARATOR (U+2028)")
            case "\u{2029}": return (line, column, "PARAGRAPH SEPARATOR (U+2029)")
            default: column += 1
            }
        }
        return previousWasCR ? (line, column - 1, "a carriage return without a line feed") : nil
    }

    private static func syntaxError(_ error: any Error, text: String, file: String) -> PolicyFileError {
        var line = 1
        var column = 1
        var problem = "\(error)"
        if let yaml = error as? YamlError {
            switch yaml {
            case .scanner(_, let p, let mark, _), .parser(_, let p, let mark, _), .composer(_, let p, let mark, _):
                (line, column, problem) = (mark.line, mark.column, p)
            case .duplicatedKeysInMapping(let keys, let context):
                (line, column) = (context.mark.line, context.mark.column)
                problem = "duplicate keys \(keys.joined(separator: ", "))"
            case .reader(let p, let offset, _, _):
                problem = p
                if let offset {
                    let prefix = text.unicodeScalars.prefix(offset)
                    line = prefix.filter { $0 == "\n" }.count + 1
                    column = prefix.split(separator: "\n", omittingEmptySubsequences: false).last.map(\.count)! + 1
                }
            default:
                break
            }
        }
        // libyaml reports the end of input one line past the last one; point at the real end.
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if line > lines.count {
            line = lines.count
            column = (lines.last?.unicodeScalars.count ?? 0) + 1
        }
        return PolicyFileError(
            .syntax, file: file, line: line, column: column, message: "YAML syntax error: \(problem)",
            expected: "well-formed YAML (block mappings and sequences)",
            hint: "check indentation, colons, quotes and brackets here or on the line before")
    }
}
