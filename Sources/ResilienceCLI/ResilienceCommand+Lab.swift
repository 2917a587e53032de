import ArgumentParser
import NetworkLab
import ResiliencePolicyFile

extension ResilienceCommand {
    /// `netres lab`: the NetworkLab kit for any program, driven by a YAML scenario.
    struct Lab: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run a command behind scripted network faults in throw-away namespaces (root).",
            discussion: """
                A scenario's timeline plays link faults (carrier-loss, partition, dead-path: a link that looks \
                up while nothing crosses it, ...), registrar faults and client steps; `netres lab run --help` \
                lists them. What a lab makes (namespaces with their links and rules, processes, its folder) \
                goes at its end, also after a killed run (`netres lab gc`).
                """,
            subcommands: [LabRun.self, LabCheck.self, LabGC.self]
        )
    }

    /// `netres lab check FILE`: exit 0 when the scenario is valid, 1 with a located error.
    struct LabCheck: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "check", abstract: "Validate a lab scenario.")

        @Argument(help: "The YAML scenario file.")
        var file: String

        func run() throws {
            let scenario = try LabRun.load(file)
            print("\(file): valid (\(scenario.links.count) links, \(scenario.steps.count) steps)")
        }
    }

    /// `netres lab gc`: removes the namespaces, processes and folders of labs whose owner is gone.
    struct LabGC: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "gc", abstract: "Remove what labs of dead processes left behind.")

        @Flag(help: "Also remove the objects of labs whose owner still runs.")
        var all = false

        func run() throws {
            let removed = LabOwnership.collectGarbage(all: all)
            for name in removed { print("removed \(name)") }
            print("\(removed.count) lab objects removed")
        }
    }

    /// `netres lab run FILE -- COMMAND…`.
    struct LabRun: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "run",
            abstract: "Bring a lab up from a scenario, run COMMAND in its client host, play the fault timeline.",
            discussion: """
                The command sees NETLAB_REGISTRAR (the registrar's address), NETLAB_INTERFACES and NETLAB_SEED.
                The run ends when the command exits or the scenario's duration is over (the command is then \
                stopped), whichever comes first; steps not played by then are dropped. Either way the whole \
                report (the timeline of faults and the registrar's requests, its bindings at the end) is printed.
                Link steps act on the scenario's first link unless they name one: admin-down, carrier-loss, \
                default-route-loss and dead-path LINK for 3s, address-change [make-before-break | \
                break-before-make], renumber, interface-switch LINK to LINK for 4s, link-recreate after 2s, \
                rename LINK to NAME for 2s, move for 2s, flap N every 200ms [duty 50%], packet-loss 30% for 3s, \
                partition outbound | inbound | both for 3s, rate-limit 64kbit for 3s, delay 100ms [jitter 20ms] \
                for 3s, netlink-overrun N. dead-path is a dead link that looks up: every packet is dropped both \
                ways where it arrives, while the link, its carrier, addresses and routes stay and its first hop \
                still answers ARP and neighbour discovery, so netlink shows nothing and no sender gets an error \
                (partition drops as the client sends, which its sockets see as EPERM).
                With push: true the registrar is also an RFC 8599 push proxy and the lab's push service delivers \
                each push by running `netres ctl push ACCOUNT --kind KIND` in the client host (at the scenario's \
                control-socket). Client steps: app-state STATE, push-token ACCOUNT TOKEN (both run netres ctl \
                there), call ACCOUNT [for 20s] (sipp calls through the registrar: rung, answered?) and message \
                ACCOUNT [for 20s] (stored, delivered?); the report shows what came of each.
                Exit status: the command's (0 when the duration stopped it), 1 for a bad scenario, 2 when the \
                lab fails.
                """
        )

        @Argument(help: "The YAML scenario file.")
        var file: String

        @Argument(parsing: .postTerminator, help: "The command to run in the client host.")
        var command: [String] = []

        static func load(_ file: String) throws -> LabScenario {
            do {
                return try LabScenario.load(path: file)
            } catch {
                printError(error.description)
                throw ExitCode(1)
            }
        }

        func run() async throws {
            let scenario = try Self.load(file)
            guard !command.isEmpty else { throw ValidationError("name a command after --") }
            let status: Int32
            do {
                status = try await LabPlayer(scenario: scenario, command: command).play()
            } catch let error as NetworkLabError {
                printError("netres lab: \(error)")
                throw ExitCode(2)
            }
            if status != 0 { throw ExitCode(status) }
        }
    }
}
