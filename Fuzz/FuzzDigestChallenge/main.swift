import CFuzzerDriver
import SIPPlugin

/// libFuzzer target: the input is the values of `WWW-Authenticate` headers, one per line, as
/// ``SIPParser`` would hand them over (a header value never contains a line feed).
///
/// Checks, besides "never traps": a challenge ``DigestChallenge/best(of:)`` picks is one of the
/// parsed ones, and the `Authorization` value built from it stays on one line and never carries the password.
func fuzzDigestChallenge(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    let headers = text.split(separator: "\n", omittingEmptySubsequences: false).prefix(16).map(String.init)
    let parsed = headers.compactMap(DigestChallenge.init(header:))
    guard let best = DigestChallenge.best(of: headers) else {
        guard parsed.isEmpty else { fatalError("best(of:) found nothing among \(parsed.count) challenges") }
        return
    }
    guard parsed.contains(best) else { fatalError("best(of:) returned a challenge it did not parse") }
    let password = "pw-7Qz9"
    let credentials = DigestCredentials(username: "alice", password: password)
    let value = credentials.authorization(
        for: best, method: "REGISTER", uri: "sip:example.test", nonceCount: 1, cnonce: "0a4f113b")
    guard !value.contains("\n") else { fatalError("the Authorization value spans lines") }
    let echoed = [best.realm, best.nonce, best.opaque ?? ""].contains { $0.contains(password) }
    guard echoed || !value.contains(password) else { fatalError("the Authorization value quotes the password") }
}

cfuzzer_run(CommandLine.argc, CommandLine.unsafeArgv) { data, size in
    fuzzDigestChallenge(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
