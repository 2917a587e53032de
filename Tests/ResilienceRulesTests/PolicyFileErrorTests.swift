import ResilienceCore
import ResiliencePolicyFile
import ResilienceRules
import Testing

/// Every class of bad input yields a located error with what was expected and, for near misses,
/// the nearest valid name.
struct PolicyFileErrorTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var yaml: String
        var code: PolicyFileError.Code
        var line: Int
        var column: Int
        var hint: String?
        var testDescription: String { name }
    }

    static func rule(on: String = "shutdown", for service: String = "http") -> String {
        "rules:\n  - name: r\n    on: \(on)\n    for: \(service)\n"
    }
    static let rule = rule()

    static let cases: [Case] = [
        Case(
            name: "unknown top-level key", yaml: "hold-dwn: 2s\n", code: .unknownKey, line: 1, column: 1,
            hint: "hold-down"),
        Case(
            name: "unknown rule key", yaml: rule + "    do: drain-http\n    wehn: foreground\n", code: .unknownKey,
            line: 6, column: 5, hint: "when"),
        Case(
            name: "a rule's key in a level row",
            yaml: "levels:\n  - for: http\n    foreground: full\n    background: none\n", code: .unknownKey,
            line: 2, column: 5, hint: "service"),
        Case(
            name: "a level row's key in a rule", yaml: "rules:\n  - name: r\n    on: shutdown\n    service: http\n",
            code: .unknownKey, line: 4, column: 5, hint: "for"),
        Case(
            name: "an everyday word for a rule key", yaml: rule + "    actions: drain-http\n", code: .unknownKey,
            line: 5, column: 5, hint: "do"),
        Case(
            name: "unknown backoff key", yaml: "backoff:\n  maximum: 2s\n", code: .unknownKey, line: 2, column: 3,
            hint: "max"),
        Case(
            name: "unknown service", yaml: rule(for: "htpp") + "    do: drain-http\n",
            code: .unknownName, line: 4, column: 10, hint: "http"),
        Case(
            name: "unknown action", yaml: rule + "    do: drain-htp\n", code: .unknownName, line: 5, column: 9,
            hint: "drain-http"),
        Case(
            name: "unknown action in a list", yaml: rule + "    do: [drain-http, opne-http]\n", code: .unknownName,
            line: 5, column: 22, hint: "open-http"),
        Case(
            name: "unknown state", yaml: rule + "    do: drain-http\n    when: backgrund\n", code: .unknownName,
            line: 6, column: 11, hint: "background"),
        Case(
            name: "unknown trigger",
            yaml: rule(on: "network.lsot")
                + "    do: drain-http\n", code: .unknownName, line: 3, column: 9, hint: "network.lost"),
        Case(
            name: "unknown level", yaml: "levels:\n  - service: http\n    foreground: ful\n    background: none\n",
            code: .unknownName, line: 3, column: 17, hint: "full"),
        Case(
            name: "unknown condition", yaml: rule + "    do: drain-http\n    if: stael\n", code: .unknownName,
            line: 6, column: 9, hint: "stale"),
        Case(
            name: "duration of the wrong type", yaml: "hold-down: fast\n", code: .wrongType, line: 1,
            column: 12),
        Case(name: "duration without a unit", yaml: "refresh-margin: 30\n", code: .wrongType, line: 1, column: 17),
        Case(
            name: "number of the wrong type", yaml: "backoff:\n  multiplier: quick\n", code: .wrongType, line: 2,
            column: 15),
        Case(
            name: "mapping where a list belongs", yaml: "levels:\n  http: full\n", code: .wrongType, line: 2,
            column: 3),
        Case(name: "list where a mapping belongs", yaml: "backoff: [1s]\n", code: .wrongType, line: 1, column: 10),
        Case(name: "a document that is not a mapping", yaml: "- a\n- b\n", code: .wrongType, line: 1, column: 1),
        Case(name: "missing key", yaml: rule, code: .missingKey, line: 2, column: 5),
        Case(name: "out of range", yaml: "backoff:\n  jitter: 2\n", code: .invalidValue, line: 2, column: 11),
        Case(
            name: "action for the wrong service", yaml: rule + "    do: subscribe\n", code: .invalidValue, line: 5,
            column: 9),
        Case(
            name: "contradictory rules",
            yaml: "extra-rules:\n  - name: keep-others\n    on: app.entered-background\n    for: subscription\n"
                + "    do: subscribe\n", code: .contradiction, line: 2, column: 5),
        Case(
            name: "a rule contradicting itself",
            yaml: rule(for: "call")
                + "    do: [hold-call, resume-call]\n", code: .contradiction, line: 2, column: 5),
        Case(
            name: "unknown service kind", yaml: "services:\n  - {id: x, kind: call.active}\n", code: .unknownName,
            line: 2, column: 19, hint: "call.outgoing.active"),
        Case(
            name: "duplicate service id",
            yaml: "services:\n  - {id: x, kind: http}\n  - {id: x, kind: registration}\n", code: .duplicateKey,
            line: 3, column: 10),
        Case(
            name: "a rule the level table always drops",
            yaml:
                "extra-rules:\n  - {name: bg-http, on: network.restored, when: background, for: http, do: open-http}\n",
            code: .contradiction, line: 2, column: 5),
        Case(
            name: "two rows for one service",
            yaml: "levels:\n  - {service: http, foreground: full, background: none}\n"
                + "  - {service: http, foreground: none, background: none}\n", code: .contradiction, line: 3,
            column: 15),
        Case(
            name: "backoff max below initial", yaml: "backoff: {initial: 10s, max: 1s}\n", code: .contradiction,
            line: 1, column: 30),
        Case(
            name: "duplicate rule name",
            yaml: "extra-rules:\n  - {name: shutdown-unregister, on: shutdown, "
                + "for: registration, do: close-stale-transports}\n", code: .duplicateKey, line: 2, column: 5),
        Case(
            name: "run-hook left the action vocabulary (hooks run on transitions)", yaml: rule + "    do: run-hook\n",
            code: .unknownName, line: 5, column: 9),
        Case(name: "empty file", yaml: "", code: .empty, line: 1, column: 1),
        Case(name: "only comments", yaml: "# nothing here\n", code: .empty, line: 1, column: 1),
        Case(name: "YAML syntax error", yaml: "levels: [\n  - a\n", code: .syntax, line: 2, column: 3),
        Case(name: "unsupported version", yaml: "version: 2\n", code: .invalidValue, line: 1, column: 10),
        // Floors under every repetition and ceilings on every wait.
        Case(
            name: "refresh margin of 1000h", yaml: "refresh-margin: 1000h\n", code: .invalidValue, line: 1, column: 17),
        Case(name: "refresh margin of zero", yaml: "refresh-margin: 0\n", code: .invalidValue, line: 1, column: 17),
        Case(
            name: "call survival budget over a day", yaml: "call-survival-budget: 25h\n", code: .invalidValue, line: 1,
            column: 23),
        Case(
            name: "call survival budget without a unit", yaml: "call-survival-budget: 30\n", code: .wrongType,
            line: 1, column: 23),
        Case(
            name: "backoff initial of zero", yaml: "backoff: {initial: 0s}\n", code: .invalidValue, line: 1, column: 20),
        Case(name: "backoff max of a year", yaml: "backoff: {max: 8760h}\n", code: .invalidValue, line: 1, column: 16),
        Case(
            name: "wake-up minimum interval of zero", yaml: "wake-up-minimum-interval: 0s\n", code: .invalidValue,
            line: 1, column: 27),
        Case(
            name: "damping reuse above suppress", yaml: "flap-damping: {suppress: 500, reuse: 750}\n",
            code: .contradiction, line: 1, column: 38),
        Case(
            name: "damping half-life of zero", yaml: "flap-damping: {half-life: 0}\n", code: .invalidValue, line: 1,
            column: 27),
        Case(
            name: "unknown damping key", yaml: "flap-damping: {half-live: 5s}\n", code: .unknownKey, line: 1,
            column: 16, hint: "half-life"),
        Case(name: "hold-down of a day", yaml: "hold-down: 24h\n", code: .invalidValue, line: 1, column: 12),
    ]

    @Test(arguments: cases)
    func badInputIsALocatedHelpfulError(_ c: Case) {
        #expect {
            _ = try PolicyFile.parse(c.yaml, file: "bad.yaml")
        } throws: { error in
            guard let error = error as? PolicyFileError else { return false }
            #expect(error.code == c.code)
            #expect((error.line, error.column) == (c.line, c.column), "\(error)")
            #expect(error.file == "bad.yaml")
            #expect(!error.expected.isEmpty)
            if let hint = c.hint { #expect(error.hint == "did you mean \"\(hint)\"?") }
            #expect(error.description.hasPrefix("bad.yaml:\(error.line):\(error.column): error: "))
            return true
        }
    }

    /// Keys the project renamed are not aliases: the old name is an error that names the new one.
    @Test(arguments: [("loss-hold-down", "hold-down"), ("keep-alive-minimum-interval", "wake-up-minimum-interval")])
    func aRenamedKeyIsALocatedErrorNamingTheNewKey(old: String, new: String) {
        #expect {
            _ = try PolicyFile.parse("version: 1\n\(old): 2s\n", file: "old.yaml")
        } throws: { error in
            guard let error = error as? PolicyFileError else { return false }
            #expect(error.code == .unknownKey && error.file == "old.yaml")
            #expect((error.line, error.column) == (2, 1))
            #expect(error.hint == "renamed to \"\(new)\"")
            return true
        }
    }

    @Test func nonUTF8IsRejectedAtTheFirstBadByte() {
        let bytes = Array("version: 1\nhold-down: ".utf8) + [0xFF, 0xFE] + Array("2s\n".utf8)
        #expect {
            _ = try PolicyFile.parse(bytes, file: "latin1.yaml")
        } throws: { error in
            guard let error = error as? PolicyFileError else { return false }
            return error.code == .notUTF8 && error.line == 2 && error.column == 12
        }
    }

    /// Found by the YAML fuzz targets: libyaml counts these as line breaks, so without the check
    /// an error after one named a line past the end of the file (line 4 of a 3-line file here).
    @Test(arguments: [("\r", "carriage return"), ("\u{85}", "U+0085"), ("\u{2028}", "U+2028"), ("\u{2029}", "U+2029")])
    func lineBreaksOnlyYAMLCountsAreRejectedWhereTheyAre(lineBreak: String, name: String) {
        let text = "version: 1\nhold-down: 2s" + lineBreak + lineBreak + "bogus: 1\n"
        #expect {
            _ = try PolicyFile.parse(Array(text.utf8), file: "mac.yaml")
        } throws: { error in
            guard let error = error as? PolicyFileError else { return false }
            #expect(error.code == .syntax && error.message.contains(name), "\(error)")
            return (error.line, error.column) == (2, 14)
        }
    }

    @Test func crlfLineEndsAreStillAccepted() throws {
        _ = try PolicyFile.parse(Array("version: 1\r\nhold-down: 2s\r\n".utf8), file: "dos.yaml")
    }

    @Test func aMissingFileIsUnreadable() {
        #expect {
            _ = try PolicyFile.load(path: "/nonexistent/policy.yaml")
        } throws: { error in
            (error as? PolicyFileError)?.code == .unreadable
        }
    }
}
