internal import Foundation

/// Each account's RFC 5626 `+sip.instance` URN, kept in the state directory so that the first
/// REGISTER after a restart (even after SIGKILL) carries the same instance and the registrar
/// replaces the old binding instead of keeping a second one until it expires.
///
/// Invariants: one file per account, `<directory>/<account>.instance`, holding one
/// `urn:uuid:` line, written atomically (``PushTokenStore/write(_:to:)``, mode 0600); a missing or
/// malformed file is replaced by a new random UUID. Account names are reduced to
/// `[A-Za-z0-9._-]` for the file name, so a name cannot reach outside the directory.
public enum InstanceStore {
    /// The instance URN of `account`, created when there is none.
    /// - Throws: ``DaemonError`` when a new one cannot be written (the caller runs without one).
    public static func instance(of account: String, in directory: String) throws(DaemonError) -> String {
        let path = self.path(of: account, in: directory)
        if let stored = PushTokenStore.read(path), isInstance(stored) { return stored }
        let created = "urn:uuid:" + UUID().uuidString.lowercased()
        try PushTokenStore.write(created, to: path)
        return created
    }

    /// Where the instance of `account` is kept.
    public static func path(of account: String, in directory: String) -> String {
        let safe = String(
            account.unicodeScalars.map { scalar in
                scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || "._-".unicodeScalars.contains(scalar))
                    ? Character(scalar) : "_"
            })
        let name = safe.hasPrefix(".") ? "_" + safe.dropFirst() : safe
        return URL(fileURLWithPath: directory).appendingPathComponent(name + ".instance").path
    }

    /// `urn:uuid:` followed by a UUID in its 8-4-4-4-12 hex form.
    static func isInstance(_ text: String) -> Bool {
        guard text.hasPrefix("urn:uuid:") else { return false }
        return UUID(uuidString: String(text.dropFirst(9))) != nil
    }
}
