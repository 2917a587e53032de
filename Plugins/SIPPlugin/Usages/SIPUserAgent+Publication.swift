internal import Logging
public import ResilienceCore

/// The presence publication of an account (RFC 3903).
struct PublicationState {
    let callID = randomToken()
    let fromTag = randomToken()
    var cseq: UInt32 = 0
    /// The entity tag of the published state; nil before the first 2xx.
    var etag: String?
    var expires: Int?
}

/// A PIDF document with one tuple (RFC 3863).
public struct PresenceDocument: Hashable, Sendable {
    public var isOpen: Bool
    public var note: String?

    public init(isOpen: Bool, note: String? = nil) {
        self.isOpen = isOpen
        self.note = note
    }

    func pidf(entity: String) -> String {
        let note = self.note.map { "<note>\(xmlEscaped($0))</note>" } ?? ""
        return """
            <?xml version="1.0" encoding="UTF-8"?>\r
            <presence xmlns="urn:ietf:params:xml:ns:pidf" entity="\(xmlEscaped(entity))">\r
            <tuple id="netres"><status><basic>\(isOpen ? "open" : "closed")</basic></status>\(note)</tuple>\r
            </presence>\r

            """
    }
}

func xmlEscaped(_ text: String) -> String {
    var out = ""
    for ch in text {
        switch ch {
        case "&": out += "&amp;"
        case "<": out += "&lt;"
        case ">": out += "&gt;"
        case "\"": out += "&quot;"
        case "'": out += "&apos;"
        default: out.append(ch)
        }
    }
    return out
}

extension SIPUserAgent {
    /// The entity tag of the current publication, if any.
    public var publicationETag: String? { publication?.etag }

    /// Publishes (or modifies) presence; with `document` nil, refreshes the existing publication.
    /// A `412` (stale entity tag) republishes the full document once.
    public func publishPresence(_ document: PresenceDocument?, expires: Int = 600, path: NetworkPath) async throws {
        let flow = try await flow(for: path)
        var body = document
        for _ in 0..<2 {
            if publication == nil { publication = PublicationState() }
            if publication?.etag == nil, body == nil { body = PresenceDocument(isOpen: true) }
            let response = try await sendPublish(body, expires: expires, over: flow)
            switch response.status ?? 0 {
            case 200..<300:
                publication?.etag = response.headers["SIP-ETag"]
                publication?.expires = response.expires ?? expires
                return
            case 412:
                logger.notice("sip.publish-etag-stale")
                publication?.etag = nil
                if body == nil { body = PresenceDocument(isOpen: true) }
            default:
                throw Self.failure(response, "PUBLISH")
            }
        }
        throw PluginError("PUBLISH: entity tag rejected twice")
    }

    /// Removes the publication (`Expires: 0` with `SIP-If-Match`).
    public func removePresence(path: NetworkPath) async throws {
        guard publication?.etag != nil else { return }
        let flow = try await flow(for: path)
        let response = try await sendPublish(nil, expires: 0, over: flow)
        publication = nil
        guard let status = response.status, (200..<300).contains(status) || status == 412 else {
            throw Self.failure(response, "PUBLISH (remove)")
        }
    }

    private func sendPublish(_ document: PresenceDocument?, expires: Int, over flow: SIPTransport) async throws
        -> SIPMessage
    {
        let aor = account.addressOfRecord
        var request = SIPMessage.request("PUBLISH", uri: aor)
        request.headers.add("From", "<\(aor)>;tag=\(publication?.fromTag ?? randomToken())")
        request.headers.add("To", "<\(aor)>")
        request.headers.add("Call-ID", publication?.callID ?? randomToken())
        request.headers.add("CSeq", "0 PUBLISH")
        request.headers.add("Event", "presence")
        request.headers.add("Expires", "\(expires)")
        if let etag = publication?.etag { request.headers.add("SIP-If-Match", etag) }
        if let document {
            request.headers.add("Content-Type", "application/pidf+xml")
            request.body = Array(document.pidf(entity: aor).utf8)
        }
        return try await exchange(request, uri: aor, over: flow) {
            publication?.cseq += 1
            return publication?.cseq ?? 1
        }
    }
}
