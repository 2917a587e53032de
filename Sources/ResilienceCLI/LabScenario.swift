import Foundation
import ResiliencePolicyFile
import Yams

/// A `netres lab` scenario file: hosts `client` and `server`, the client's links, an optional
/// Kamailio registrar in `server`, a bound on the run, and a fault timeline.
///
/// ```yaml
/// seed: 42                      # optional: replay a run
/// registrar: true               # Kamailio on 198.19.255.1:5060 (user U, password secret-U)
/// push: false                   # true: the registrar is an RFC 8599 push proxy, with a push service
/// control-socket: /run/netres.sock  # the client's `netres ctl` socket (push deliveries, client steps)
/// links: [wifi, {name: cellular, metric: 200}]
/// duration: 30s                 # the command is stopped after this
/// timeline:
///   - at 2s carrier-loss for 3s
///   - at 10s address-change
///   - at 12s flap 50 every 200ms
/// ```
///
/// Invariant: a scenario that loads is one the lab can play; every error names file, line and column.
struct LabScenario: Sendable {
    struct Link: Sendable {
        var name: String
        var metric: Int
    }

    var seed: UInt64?
    var registrar = false
    /// The registrar is also an RFC 8599 push proxy and the lab's push service runs (implies `registrar`).
    var push = false
    /// The control socket `netres ctl` reaches the client by (nil: netres's default).
    var controlSocket: String?
    var links: [Link] = []
    var duration: Duration = .seconds(60)
    var steps: [LabStep] = []

    static let keys = ["seed", "registrar", "push", "control-socket", "links", "duration", "timeline"]

    /// Reads the scenario through the policy reader's bounded, located file read.
    static func load(path: String) throws(PolicyFileError) -> LabScenario {
        try parse(try PolicyFile.readText(path: path), file: path)
    }

    static func parse(_ text: String, file: String) throws(PolicyFileError) -> LabScenario {
        let reader = LocatedYAML(file: file)
        guard let root = try PolicyFile.compose(text, file: file) else {
            throw PolicyFileError(
                .empty, file: file, line: 1, column: 1, message: "the scenario is empty",
                expected: "keys \(keys.joined(separator: ", "))")
        }
        let entries = try reader.mapping(root, keys: keys, what: "the scenario")
        var scenario = LabScenario()
        for entry in entries {
            switch entry.key {
            case "seed":
                // Any seed a lab prints (up to 2^64-1) replays: read as text, not as a Double.
                let text = try reader.scalar(entry.value, expected: "a seed from 1 to 18446744073709551615")
                guard let seed = UInt64(text), seed != 0 else {
                    throw reader.fail(
                        .invalidValue, at: entry.value, "seed must be a whole number from 1 to 2^64-1",
                        expected: "a seed a lab printed, e.g. 42")
                }
                scenario.seed = seed
            case "registrar":
                let word = try reader.scalar(entry.value, expected: "true or false")
                guard let flag = Bool(word) else {
                    throw reader.fail(
                        .wrongType, at: entry.value, "registrar must be true or false", expected: "true or false")
                }
                scenario.registrar = scenario.registrar || flag
            case "push":
                let word = try reader.scalar(entry.value, expected: "true or false")
                guard let flag = Bool(word) else {
                    throw reader.fail(
                        .wrongType, at: entry.value, "push must be true or false", expected: "true or false")
                }
                scenario.push = flag
                scenario.registrar = scenario.registrar || flag
            case "control-socket":
                let path = try reader.scalar(entry.value, expected: "an absolute path")
                guard path.hasPrefix("/"), path.count <= 200,
                    path.unicodeScalars.allSatisfy({ $0.value >= 32 && $0.value != 127 })
                else {
                    throw reader.fail(
                        .invalidValue, at: entry.value,
                        "control-socket must be an absolute path of at most 200 characters",
                        expected: "e.g. /run/netres.sock")
                }
                scenario.controlSocket = path
            case "duration":
                scenario.duration = try reader.duration(entry.value, what: "duration")
                guard scenario.duration > .zero, scenario.duration <= .seconds(3600) else {
                    throw reader.fail(
                        .invalidValue, at: entry.value, "duration must be within 1h", expected: "e.g. 30s")
                }
            case "links": scenario.links = try links(entry.value, reader: reader)
            default: break
            }
        }
        if scenario.links.isEmpty { scenario.links = [Link(name: "eth0", metric: 100)] }
        if let timeline = entries.first(where: { $0.key == "timeline" }) {
            scenario.steps = try steps(timeline.value, reader: reader, links: scenario.links.map(\.name))
        }
        return scenario
    }

    static func links(_ node: Node, reader: LocatedYAML) throws(PolicyFileError) -> [Link] {
        guard case .sequence(let items) = node, (1...8).contains(items.count) else {
            throw reader.fail(.wrongType, at: node, "links must be a list of 1-8 links", expected: "[wifi, cellular]")
        }
        var links: [Link] = []
        for item in items {
            var link = Link(name: "", metric: 100 * (links.count + 1))
            if case .mapping = item {
                let entries = try reader.mapping(item, keys: ["name", "metric"], what: "a link")
                link.name = try reader.scalar(
                    try reader.require("name", in: entries, of: item, what: "a link"), expected: "a name")
                if let metric = entries.first(where: { $0.key == "metric" }) {
                    link.metric = Int(try reader.number(metric.value, in: 1...10_000, what: "metric"))
                }
            } else {
                link.name = try reader.scalar(item, expected: "a link name")
            }
            guard (1...14).contains(link.name.count),
                link.name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }),
                !links.contains(where: { $0.name == link.name })
            else {
                throw reader.fail(
                    .invalidValue, at: item, "bad or repeated link name", expected: "1-14 letters or digits, unique")
            }
            links.append(link)
        }
        return links
    }

    static func steps(_ node: Node, reader: LocatedYAML, links: [String]) throws(PolicyFileError) -> [LabStep] {
        guard case .sequence(let items) = node, items.count <= 1000 else {
            throw reader.fail(
                .wrongType, at: node, "timeline must be a list of at most 1000 steps",
                expected: "- at 2s carrier-loss for 3s")
        }
        var steps: [LabStep] = []
        for item in items {
            let text = try reader.scalar(item, expected: "a step like \"at 2s carrier-loss for 3s\"")
            do {
                steps.append(try LabStep.parse(text, links: links))
            } catch {
                let (line, column) = reader.location(item)
                throw PolicyFileError(
                    .invalidValue, file: reader.file, line: line, column: column + error.offset, message: error.message,
                    expected: error.expected)
            }
        }
        return steps
    }
}
