/// Which account a datagram on a shared UDP socket belongs to (RFC 3261 §18.1.2, §18.2.1).
///
/// A pure value: the socket keeps one and asks it for every parsed message.
/// - A response goes to the flow whose tag starts its top Via branch: every branch a flow
///   makes is `z9hG4bK<tag>.<random>` (``SIPTransport/newBranch()``), and a response carries
///   the Via of its request unchanged.
/// - A request goes to the flow whose user is the Request-URI's user (the Contact the account
///   bound, or a dialog's remote target, which is that Contact); failing that, the To user;
///   failing both, the only flow when there is one.
///
/// Invariants: tags and users are unique among the attached flows (the hub never puts two
/// accounts with one user on one socket); a message matching no attached flow gets nil and is
/// dropped by the caller, counted.
struct DatagramRoutes<Destination> {
    private var byTag: [String: Destination] = [:]
    private var tagByUser: [String: String] = [:]

    var isEmpty: Bool { byTag.isEmpty }

    /// Attaches a flow; false when its tag or user is taken already.
    mutating func attach(_ destination: Destination, tag: String, user: String) -> Bool {
        guard byTag[tag] == nil, tagByUser[user] == nil else { return false }
        byTag[tag] = destination
        tagByUser[user] = tag
        return true
    }

    /// Detaches the flow with `tag`; returns it when it was attached.
    @discardableResult
    mutating func detach(tag: String) -> Destination? {
        guard let destination = byTag.removeValue(forKey: tag) else { return nil }
        if let user = tagByUser.first(where: { $0.value == tag })?.key { tagByUser.removeValue(forKey: user) }
        return destination
    }

    /// Every attached flow (the socket closed under them).
    mutating func detachAll() -> [Destination] {
        defer {
            byTag.removeAll()
            tagByUser.removeAll()
        }
        return Array(byTag.values)
    }

    /// The flow `message` belongs to, if any.
    func destination(of message: SIPMessage) -> Destination? {
        guard message.isRequest else {
            return message.topViaBranch.flatMap(Self.tag(ofBranch:)).flatMap { byTag[$0] }
        }
        for user in [message.requestURIUser, message.toUser].compactMap({ $0 }) {
            if let tag = tagByUser[user] { return byTag[tag] }
        }
        // A socket of one account: every request is that account's to answer (a peer that
        // calls `sip:callee@` at our address, whatever the Contact said).
        return byTag.count == 1 ? byTag.values.first : nil
    }

    /// The flow tag of a branch this agent made: between the magic cookie and the first dot.
    static func tag(ofBranch branch: String) -> String? {
        guard branch.hasPrefix(magicCookie) else { return nil }
        let rest = branch.dropFirst(magicCookie.count)
        guard let dot = rest.firstIndex(of: ".") else { return nil }
        return String(rest[..<dot])
    }

    /// RFC 3261 §8.1.1.7's branch prefix.
    static var magicCookie: String { "z9hG4bK" }
}

extension SIPMessage {
    /// The user part of a request's Request-URI (`sip:user@host;params`), as sent.
    var requestURIUser: String? { requestURI.flatMap { Self.user(ofURI: Substring($0)) } }

    /// The user part of the To header's URI.
    var toUser: String? { headers["To"].flatMap { Self.user(ofURI: Substring(extractURI($0))) } }

    /// `user` of `sip:user@host` / `sips:user:password@host`; nil without a user part.
    static func user(ofURI uri: Substring) -> String? {
        guard let colon = uri.firstIndex(of: ":") else { return nil }
        let rest = uri[uri.index(after: colon)...]
        guard let at = rest.firstIndex(of: "@") else { return nil }
        let user = rest[..<at].prefix { $0 != ":" }
        return user.isEmpty ? nil : String(user)
    }
}
