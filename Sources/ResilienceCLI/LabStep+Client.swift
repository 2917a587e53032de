import ResilienceCore

/// The steps that act on the client and its account rather than on a link:
/// - `app-state STATE`: `netres ctl state STATE` in the client host (foreground, background,
///   suspended);
/// - `push-token ACCOUNT TOKEN`: `netres ctl push-token ACCOUNT TOKEN` there;
/// - `call ACCOUNT [for DURATION]`: sipp in the server host calls ACCOUNT through the registrar
///   and waits up to DURATION (default 20 s) for its 180 and 200;
/// - `message ACCOUNT [for DURATION]`: sipp sends ACCOUNT a MESSAGE through the registrar and
///   waits up to DURATION for the client's 200 to the registrar's relay (needs `push: true`).
///
/// Invariant: an account is 1–64 of `A-Za-z0-9._-` and a token 1–256 of `A-Za-z0-9._:~-`, so
/// neither can smuggle an option or a sipp keyword into the commands they reach.
extension LabStep {
    mutating func readClientArguments(_ words: inout Words) throws(Problem) {
        switch kind {
        case .appState:
            let word = words.peek ?? ""
            guard let state = AppState(rawValue: word) else {
                throw words.problem(
                    "unknown app state \"\(word.prefix(40))\"",
                    expected: AppState.allCases.map(\.rawValue).joined(separator: ", "))
            }
            value = state.rawValue
            words.advance()
        case .pushToken:
            target = try Self.word(&words, maximum: 64, extra: "._-", what: "an account (1-64 of A-Za-z0-9._-)")
            value = try Self.word(&words, maximum: 256, extra: "._:~-", what: "a token (1-256 of A-Za-z0-9._:~-)")
        default:
            target = try Self.word(&words, maximum: 64, extra: "._-", what: "an account (1-64 of A-Za-z0-9._-)")
            duration = .seconds(20)
            if words.peek == "for" {
                words.advance()
                duration = try words.duration("how long to wait, e.g. 20s")
            }
        }
    }

    /// 1…`maximum` ASCII letters, digits or `extra`.
    static func word(_ words: inout Words, maximum: Int, extra: String, what: String) throws(Problem) -> String {
        let word = words.peek ?? ""
        guard (1...maximum).contains(word.count),
            word.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || extra.contains($0)) })
        else {
            throw words.problem(
                word.isEmpty ? "missing \(what)" : "\"\(word.prefix(40))\" is not \(what)", expected: what)
        }
        words.advance()
        return word
    }
}
