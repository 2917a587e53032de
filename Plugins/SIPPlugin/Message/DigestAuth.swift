internal import Crypto

/// A `WWW-Authenticate` / `Proxy-Authenticate` Digest challenge (RFC 2617, RFC 7616, RFC 8760).
public struct DigestChallenge: Hashable, Sendable {
    public enum Algorithm: String, Hashable, Sendable {
        case md5 = "MD5"
        case sha256 = "SHA-256"
    }

    public var realm: String
    public var nonce: String
    public var opaque: String?
    public var algorithm: Algorithm
    /// True when the server offers `qop=auth` (we never use `auth-int`).
    public var qopAuth: Bool
    /// `stale=true`: the nonce expired but the credentials were right; retry with the new nonce.
    public var stale: Bool

    public init(
        realm: String, nonce: String, opaque: String? = nil, algorithm: Algorithm = .md5, qopAuth: Bool = true,
        stale: Bool = false
    ) {
        self.realm = realm
        self.nonce = nonce
        self.opaque = opaque
        self.algorithm = algorithm
        self.qopAuth = qopAuth
        self.stale = stale
    }

    /// Parses one challenge header value; nil when it is not a usable Digest challenge
    /// (other scheme, unknown algorithm such as `MD5-sess`, missing realm or nonce).
    public init?(header: String) {
        let trimmed = header.trimmingSIPWhitespace()
        guard trimmed.lowercased().hasPrefix("digest ") else { return nil }
        var params: [String: String] = [:]
        for item in SIPHeaders.splitList(String(trimmed.dropFirst(7))) {
            let pieces = item.split(separator: "=", maxSplits: 1)
            guard pieces.count == 2 else { continue }
            var value = String(pieces[1]).trimmingSIPWhitespace()
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                value = String(value.dropFirst().dropLast())
            }
            params[String(pieces[0]).trimmingSIPWhitespace().lowercased()] = value
        }
        guard let realm = params["realm"], let nonce = params["nonce"] else { return nil }
        let algorithmName = (params["algorithm"] ?? "MD5").uppercased()
        guard let algorithm = Algorithm(rawValue: algorithmName) else { return nil }
        let qops = (params["qop"] ?? "").split(separator: ",").map { $0.trimmingCharacters() }
        if params["qop"] != nil, !qops.contains("auth") { return nil }
        self.init(
            realm: realm, nonce: nonce, opaque: params["opaque"], algorithm: algorithm, qopAuth: qops.contains("auth"),
            stale: params["stale"]?.lowercased() == "true")
    }

    /// The strongest usable challenge among header values (SHA-256 before MD5, RFC 8760 §2.4).
    public static func best(of headers: [String]) -> DigestChallenge? {
        let parsed = headers.compactMap(DigestChallenge.init(header:))
        return parsed.first { $0.algorithm == .sha256 } ?? parsed.first
    }
}

/// Computes Digest `Authorization` values.
public struct DigestCredentials: Hashable, Sendable {
    public var username: String
    public var password: String

    public init(username: String, password: String) {
        self.username = username
        self.password = password
    }

    /// The `response` value (RFC 2617 §3.2.2.1; RFC 7616 §3.4.1 for SHA-256).
    public func response(
        to challenge: DigestChallenge, method: String, uri: String, nonceCount: UInt32, cnonce: String
    ) -> String {
        let hash = { (text: String) in Self.hexDigest(text, challenge.algorithm) }
        let ha1 = hash("\(username):\(challenge.realm):\(password)")
        let ha2 = hash("\(method):\(uri)")
        if challenge.qopAuth {
            return hash("\(ha1):\(challenge.nonce):\(Self.nonceCountString(nonceCount)):\(cnonce):auth:\(ha2)")
        }
        return hash("\(ha1):\(challenge.nonce):\(ha2)")
    }

    /// A complete `Authorization` / `Proxy-Authorization` header value.
    public func authorization(
        for challenge: DigestChallenge, method: String, uri: String, nonceCount: UInt32, cnonce: String
    ) -> String {
        let digest = response(to: challenge, method: method, uri: uri, nonceCount: nonceCount, cnonce: cnonce)
        var value =
            "Digest username=\"\(username)\", realm=\"\(challenge.realm)\", nonce=\"\(challenge.nonce)\", "
            + "uri=\"\(uri)\", response=\"\(digest)\", algorithm=\(challenge.algorithm.rawValue)"
        if challenge.qopAuth {
            value += ", qop=auth, nc=\(Self.nonceCountString(nonceCount)), cnonce=\"\(cnonce)\""
        }
        if let opaque = challenge.opaque { value += ", opaque=\"\(opaque)\"" }
        return value
    }

    static func nonceCountString(_ count: UInt32) -> String {
        let hex = String(count, radix: 16)
        return String(repeating: "0", count: max(0, 8 - hex.count)) + hex
    }

    static func hexDigest(_ text: String, _ algorithm: DigestChallenge.Algorithm) -> String {
        let bytes: [UInt8] =
            switch algorithm {
            case .md5: Array(Insecure.MD5.hash(data: Array(text.utf8)))
            case .sha256: Array(SHA256.hash(data: Array(text.utf8)))
            }
        return hexString(bytes)
    }
}

func hexString(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef")
    var out = ""
    out.reserveCapacity(bytes.count * 2)
    for byte in bytes {
        out.append(digits[Int(byte >> 4)])
        out.append(digits[Int(byte & 0x0f)])
    }
    return out
}

extension Substring {
    func trimmingCharacters() -> String { String(self).trimmingSIPWhitespace().lowercased() }
}
