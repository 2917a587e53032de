internal import Foundation

/// The names a hosts file (`/etc/hosts`) lists, read as the system resolver reads it: a name there
/// is answered from the file before any DNS server is asked (glibc's `hosts: files dns`).
///
/// Invariants: at most ``maximumBytes`` of the file and ``maximumLines`` lines are read; a line's
/// first field is kept only when it is an IP literal; names compare case-insensitively.
struct HostsFile: Sendable {
    static let maximumBytes = 1 << 20
    static let maximumLines = 10_000

    private var addresses: [String: [String]] = [:]

    /// The file's text parsed: `ADDRESS NAME [ALIAS...]`, `#` starts a comment.
    init(text: String) {
        for line in text.split(whereSeparator: \.isNewline).prefix(Self.maximumLines) {
            let fields = line.prefix { $0 != "#" }.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 2, SIPServerLocator.isIPLiteral(String(fields[0])) else { continue }
            for name in fields.dropFirst() {
                addresses[name.lowercased(), default: []].append(String(fields[0]))
            }
        }
    }

    /// The system's hosts file (in a network namespace entered with `ip netns exec`, the file
    /// bind-mounted for that namespace); empty when it cannot be read.
    static func system(path: String = "/etc/hosts") -> HostsFile {
        guard let handle = FileHandle(forReadingAtPath: path) else { return HostsFile(text: "") }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: maximumBytes)) ?? Data()
        return HostsFile(text: String(decoding: data, as: UTF8.self))
    }

    /// Whether the file lists `name`.
    func lists(_ name: String) -> Bool { addresses[name.lowercased()] != nil }

    /// The addresses the file gives `name`, in file order.
    func addresses(of name: String) -> [String] { addresses[name.lowercased()] ?? [] }
}
