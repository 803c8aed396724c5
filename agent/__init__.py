from agent.commands import refuse_unless_command

refuse_unless_command(__name__, __file__)
