import NetworkLab
import ResiliencePolicyFile

/// One entry of a lab scenario's timeline, e.g. `at 2s carrier-loss wifi for 3s`.
///
/// Invariant: every number is range-checked when read (durations ≤ 10 min, counts bounded), so a
/// step that parses is one the lab accepts.
struct LabStep: Sendable {
    enum Kind: String, CaseIterable, Sendable {
        case adminDown = "admin-down", carrierLoss = "carrier-loss", addressChange = "address-change"
        case renumber, defaultRouteLoss = "default-route-loss", interfaceSwitch = "interface-switch"
        case linkRecreate = "link-recreate", rename, move, flap, packetLoss = "packet-loss", partition
        case deadPath = "dead-path"
        case rateLimit = "rate-limit", delay, netlinkOverrun = "netlink-overrun"
        case registrarRestart = "registrar-restart", registrar503 = "registrar-503"
        case registrarDropOK = "registrar-drop-ok", registrar481 = "registrar-481"
        case appState = "app-state", pushToken = "push-token", call, message
    }

    var at: Duration = .zero
    var kind: Kind
    /// The link the fault acts on (nil: the scenario's first link).
    var link: String?
    var duration: Duration = .seconds(1)
    var count = 1
    var period: Duration = .milliseconds(200)
    var dutyCycle = 0.5
    var percent = 0
    var rate = 0
    var jitter: Duration = .zero
    var order = AddressChangeOrder.makeBeforeBreak
    var direction = PartitionDirection.both
    /// A new interface name (rename), the other link (interface-switch) or the account (client steps).
    var target = ""
    /// An app state (app-state) or a push token (push-token).
    var value = ""
    /// The text of the step, for the printed timeline.
    var text: String

    /// Why a step did not parse, and at which character of it.
    struct Problem: Error {
        var offset: Int
        var message: String
        var expected: String
    }

    /// Reads one step; `links` are the scenario's link names.
    static func parse(_ text: String, links: [String]) throws(Problem) -> LabStep {
        var words = Words(text)
        var at = Duration.zero
        if words.peek == "at" {
            words.advance()
            at = try words.duration("the instant the step starts, e.g. 2s")
        }
        let kindWord = words.peek ?? ""
        guard let kind = Kind(rawValue: kindWord) else {
            let hint = NameHint.suggestion(for: String(kindWord.prefix(40)), among: Kind.allCases.map(\.rawValue))
            throw words.problem(
                "unknown fault \"\(kindWord.prefix(40))\"" + (hint.map { " (\($0))" } ?? ""),
                expected: Kind.allCases.map(\.rawValue).joined(separator: ", "))
        }
        words.advance()
        var step = LabStep(at: at, kind: kind, text: text)
        if let word = words.peek, links.contains(word) {
            step.link = word
            words.advance()
        }
        try step.readArguments(&words, links: links)
        if let extra = words.peek { throw words.problem("unexpected \"\(extra.prefix(40))\"", expected: "end of step") }
        return step
    }

    private mutating func readArguments(_ words: inout Words, links: [String]) throws(Problem) {
        switch kind {
        case .adminDown, .carrierLoss, .defaultRouteLoss, .move, .deadPath:
            duration = try words.keyword(
                "for", then: { (w: inout Words) throws(Problem) in try w.duration("a duration") })
        case .addressChange:
            if let word = words.peek, let order = AddressChangeOrder(rawValue: word) {
                self.order = order
                words.advance()
            }
        case .renumber, .registrarRestart, .registrarDropOK, .registrar481: break
        case .interfaceSwitch:
            target = try words.keyword("to", then: { (w: inout Words) throws(Problem) in try w.name(in: links) })
            duration = try words.keyword(
                "for", then: { (w: inout Words) throws(Problem) in try w.duration("a duration") })
        case .linkRecreate:
            duration = try words.keyword(
                "after", then: { (w: inout Words) throws(Problem) in try w.duration("a pause") })
        case .rename:
            target = try words.keyword("to", then: { (w: inout Words) throws(Problem) in try w.interfaceName() })
            duration = try words.keyword(
                "for", then: { (w: inout Words) throws(Problem) in try w.duration("a duration") })
        case .flap:
            count = try words.integer(in: 1...100_000, "a number of flaps, 1-100000")
            period = try words.keyword(
                "every", then: { (w: inout Words) throws(Problem) in try w.duration("a period") })
            if words.peek == "duty" {
                words.advance()
                dutyCycle = Double(try words.percent(in: 1...99)) / 100
            }
        case .packetLoss:
            percent = try words.percent(in: 0...100)
            duration = try words.keyword(
                "for", then: { (w: inout Words) throws(Problem) in try w.duration("a duration") })
        case .partition:
            let word = words.peek ?? ""
            guard let direction = PartitionDirection(rawValue: word) else {
                throw words.problem("unknown direction \"\(word.prefix(40))\"", expected: "outbound, inbound or both")
            }
            self.direction = direction
            words.advance()
            duration = try words.keyword(
                "for", then: { (w: inout Words) throws(Problem) in try w.duration("a duration") })
        case .rateLimit:
            rate = try words.rate()
            duration = try words.keyword(
                "for", then: { (w: inout Words) throws(Problem) in try w.duration("a duration") })
        case .delay:
            period = try words.duration("a delay, e.g. 100ms")
            if words.peek == "jitter" {
                words.advance()
                jitter = try words.duration("a jitter, e.g. 20ms")
            }
            duration = try words.keyword(
                "for", then: { (w: inout Words) throws(Problem) in try w.duration("a duration") })
        case .netlinkOverrun: count = try words.integer(in: 1...20_000, "a number of changes, 1-20000")
        case .appState, .pushToken, .call, .message: try readClientArguments(&words)
        case .registrar503:
            percent = 5  // Retry-After seconds
            if words.peek == "retry-after" {
                words.advance()
                percent = try words.integer(in: 0...86_400, "seconds, 0-86400")
            }
            if words.peek == "times" {
                words.advance()
                count = try words.integer(in: 1...1000, "a count, 1-1000")
            }
        }
    }
}
