/// Every dialog of a user agent, keyed by Call-ID and tags, each with the usage that owns it
/// (a subscription's service now, a call next).
///
/// Invariants:
/// - Several dialogs may share a Call-ID and local tag with different remote tags (forking,
///   RFC 6665 §4.1.2.4; RFC 3261 §12.1): each is its own entry.
/// - At most one entry per (Call-ID, local tag) is unconfirmed (no remote tag yet).
/// - The table never grows without bound: ``capacity`` limits the entries, and an insert past it
///   is refused.
public struct DialogTable<Owner: Hashable & Sendable>: Sendable {
    /// How a request's (Call-ID, local tag, remote tag) matched the table.
    public enum Match: Hashable, Sendable {
        /// A dialog with exactly these tags, or the unconfirmed dialog these tags now confirm.
        case dialog(Dialog.ID, owner: Owner)
        /// No dialog with this remote tag, but one with the same Call-ID and local tag
        /// confirmed by another peer: the request would open a forked dialog.
        case fork(of: Dialog.ID, owner: Owner)
        /// Nothing here: answer 481 (RFC 3261 §12.2.2).
        case none
    }

    private struct Entry: Sendable {
        var dialog: Dialog
        var owner: Owner
    }

    /// The most dialogs the table holds.
    public let capacity: Int
    private var byCallID: [String: [Entry]] = [:]
    public private(set) var count = 0

    public init(capacity: Int = 1024) { self.capacity = capacity }

    /// Adds a dialog (this end's new SUBSCRIBE or INVITE, or an accepted fork).
    /// - Returns: false when the table is full or a dialog with the same ID exists.
    @discardableResult
    public mutating func insert(_ dialog: Dialog, owner: Owner) -> Bool {
        guard count < capacity, self[dialog.id] == nil else { return false }
        byCallID[dialog.callID, default: []].append(Entry(dialog: dialog, owner: owner))
        count += 1
        return true
    }

    /// The dialog with exactly this ID (a nil remote tag finds the unconfirmed one).
    public subscript(_ id: Dialog.ID) -> Dialog? {
        byCallID[id.callID]?.first { $0.dialog.id == id }?.dialog
    }

    /// The owner of the dialog with exactly this ID.
    public func owner(of id: Dialog.ID) -> Owner? {
        byCallID[id.callID]?.first { $0.dialog.id == id }?.owner
    }

    /// Matches a request received in a dialog: exact tags first, then the unconfirmed dialog of
    /// this Call-ID and local tag (which the caller confirms), then a fork.
    public func match(callID: String, localTag: String, remoteTag: String?) -> Match {
        guard let entries = byCallID[callID] else { return .none }
        let ours = entries.filter { $0.dialog.localTag == localTag }
        if let exact = ours.first(where: { $0.dialog.remoteTag == remoteTag }) {
            return .dialog(exact.dialog.id, owner: exact.owner)
        }
        if remoteTag != nil, let open = ours.first(where: { !$0.dialog.isConfirmed }) {
            return .dialog(open.dialog.id, owner: open.owner)
        }
        if let other = ours.first { return .fork(of: other.dialog.id, owner: other.owner) }
        return .none
    }

    /// Changes the dialog with this ID in place; confirming it (setting its remote tag) keeps its
    /// entry. - Returns: the dialog's ID afterwards, nil when there is no such dialog.
    @discardableResult
    public mutating func modify(_ id: Dialog.ID, _ change: (inout Dialog) -> Void) -> Dialog.ID? {
        guard var entries = byCallID[id.callID], let index = entries.firstIndex(where: { $0.dialog.id == id })
        else { return nil }
        var dialog = entries[index].dialog
        change(&dialog)
        // Identity may gain a remote tag, nothing else (Dialog's invariant).
        guard dialog.callID == id.callID, dialog.localTag == id.localTag else { return nil }
        if dialog.id != id, entries.contains(where: { $0.dialog.id == dialog.id }) { return nil }
        entries[index].dialog = dialog
        byCallID[id.callID] = entries
        return dialog.id
    }

    /// Removes the dialog with this ID. - Returns: whether it was there.
    @discardableResult
    public mutating func remove(_ id: Dialog.ID) -> Bool {
        guard var entries = byCallID[id.callID], let index = entries.firstIndex(where: { $0.dialog.id == id })
        else { return false }
        entries.remove(at: index)
        count -= 1
        byCallID[id.callID] = entries.isEmpty ? nil : entries
        return true
    }

    /// Removes every dialog of an owner (a usage that ended, with its forks).
    public mutating func removeAll(ownedBy owner: Owner) {
        for (callID, entries) in byCallID {
            let kept = entries.filter { $0.owner != owner }
            count -= entries.count - kept.count
            byCallID[callID] = kept.isEmpty ? nil : kept
        }
    }
}
