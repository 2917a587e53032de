internal import Glibc

/// Decides whether a hook file may run as the daemon's user, as NetworkManager's dispatcher does.
///
/// Invariants: a hook runs only when its real path (symbolic links resolved) is a regular,
/// executable file owned by root or by the daemon's effective user and not writable by group or
/// others, and the directory holding that real path has the same owner and write rules (so no
/// one else can swap the file). The hooks directory is checked along its whole path, as written
/// and as resolved: every entry on the way (a symbolic link included) sits in a directory no one
/// else may write to, or in a sticky one (`/tmp`) where the entry is owned by root or the daemon's
/// user, so no one else can swap the directory for theirs. Every refusal says why, in words fit
/// for one log line.
public struct HookTrust: Sendable {
    /// Owners whose files may run: root and the daemon's effective user.
    public let owners: Set<UInt32>

    /// - Parameter owners: nil means root and this process's effective user.
    public init(owners: Set<UInt32>? = nil) {
        self.owners = owners ?? [0, UInt32(geteuid())]
    }

    /// What `stat` says about one file or directory, copied out so the rules are a pure function.
    public struct Facts: Sendable, Hashable {
        public enum Kind: Sendable, Hashable { case regular, directory, other }
        public var kind: Kind
        public var owner: UInt32
        public var mode: UInt32

        public init(kind: Kind, owner: UInt32, mode: UInt32) {
            self.kind = kind
            self.owner = owner
            self.mode = mode
        }
    }

    /// Why `facts` (of a `wanted` kind) cannot be trusted, or nil when they can.
    public func refusal(_ facts: Facts, wanted: Facts.Kind) -> String? {
        if facts.kind != wanted { return wanted == .regular ? "not a regular file" : "not a directory" }
        if !owners.contains(facts.owner) { return "owned by uid \(facts.owner), not root or the daemon's user" }
        if facts.mode & 0o022 != 0 {
            return "writable by \(facts.mode & 0o002 != 0 ? "others" : "its group") (mode \(Self.octal(facts.mode)))"
        }
        return nil
    }

    /// Why the directory at `path` cannot hold hooks, or nil when it can.
    public func refusal(directory path: String) -> String? {
        guard let real = Self.realPath(path) else { return "cannot resolve \(path): \(Self.lastError())" }
        guard let facts = Self.facts(real) else { return "cannot stat \(real): \(Self.lastError())" }
        if let why = refusal(facts, wanted: .directory) { return "directory \(real) is \(why)" }
        let absolute = path.hasPrefix("/") ? path : (Self.realPath(".") ?? "") + "/" + path
        return refusal(along: absolute) ?? refusal(along: real)
    }

    /// Why an entry on the way to `path` could be swapped by someone else, or nil: each entry
    /// (not followed: a link is judged as the link) and the directory it sits in (followed).
    /// Bounded by the path's length (at most 4,096 bytes, so at most 2,048 entries).
    func refusal(along path: String) -> String? {
        var parent = "/"
        for name in path.split(separator: "/").prefix(2048) where name != "." {
            let entry = parent == "/" ? "/" + name : parent + "/" + name
            if name != "..", let facts = Self.facts(parent), let entryFacts = Self.linkFacts(entry),
                let why = refusal(entry: entryFacts, in: facts)
            {
                return "\(entry) sits in \(parent), which is \(why)"
            }
            parent = entry
        }
        return nil
    }

    /// Why a directory (`facts`) lets someone else swap an entry in it (`entry`), or nil: it is
    /// owned by an owner and not writable by group or others, or it is sticky and the entry's
    /// owner is an owner.
    public func refusal(entry: Facts, in directory: Facts) -> String? {
        let sticky = directory.mode & 0o1000 != 0
        if sticky, owners.contains(entry.owner), owners.contains(directory.owner) { return nil }
        return refusal(directory, wanted: .directory)
    }

    /// Why the hook at `path` must not run, or nil when it may (see the type's invariants).
    public func refusal(hook path: String) -> String? {
        guard let real = Self.realPath(path) else { return "cannot resolve it: \(Self.lastError())" }
        let target = real == path ? "" : " (its target \(real))"
        guard let facts = Self.facts(real) else { return "cannot stat\(target): \(Self.lastError())" }
        if let why = refusal(facts, wanted: .regular) { return "it is\(target) \(why)" }
        if facts.mode & 0o111 == 0 || access(real, X_OK) != 0 { return "it is\(target) not executable" }
        let parent = real.lastIndex(of: "/").map { String(real[..<$0]) }.flatMap { $0.isEmpty ? "/" : $0 } ?? "."
        if let parentFacts = Self.facts(parent), let why = refusal(parentFacts, wanted: .directory) {
            return "its directory \(parent) is \(why)"
        }
        return nil
    }

    /// `path` with every symbolic link resolved, or nil (errno set).
    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// `lstat` of `path`: a symbolic link is `.other`, owned by whoever made it.
    static func linkFacts(_ path: String) -> Facts? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return facts(of: info)
    }

    /// `stat` of `path` (links already resolved), or nil (errno set).
    static func facts(_ path: String) -> Facts? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return facts(of: info)
    }

    static func facts(of info: stat) -> Facts {
        let kind: Facts.Kind =
            switch info.st_mode & S_IFMT {
            case S_IFREG: .regular
            case S_IFDIR: .directory
            default: .other
            }
        return Facts(kind: kind, owner: info.st_uid, mode: info.st_mode & 0o7777)
    }

    static func octal(_ mode: UInt32) -> String { "0" + String(mode, radix: 8) }

    static func lastError() -> String { String(cString: strerror(errno)) }
}
