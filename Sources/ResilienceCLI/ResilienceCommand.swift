import ArgumentParser

@main
struct ResilienceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "netres",
        abstract: "Keep a real-time client's services alive across network loss and change.",
        subcommands: [Policy.self]
    )
}
