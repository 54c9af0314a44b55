"""A written set of sentences for measuring the name detector (privacy.py, `detect_names`), **synthetic**:
sentences written by hand like the free text a shadow-log state carries (a customer's request, an
agent's note, a tool's error), not taken from any log.

How it was made: written by the engineer who then wrote the detector that catches names outside the
configured list, BEFORE that detector was written and committed on its own, so that the set was not
shaped to the code. Nobody else was available to write it; the engineer had read the older detector
(Faker's pt_BR and pt_PT first names after a capital letter) and wrote names that one misses on purpose:
rare Brazilian names, foreign names, names in lower case, surnames alone after a title. It is not
changed to suit the detector's results; a name the detector misses stays in it and counts against recall.

WITH_NAMES: (sentence, the person's name as written in it). WITHOUT_NAMES: sentences with no person's
name, many with capitalised words that are not people (places, products, companies, months, acronyms)
or lower-case words that are also names somewhere (rosa, luz, paz), for the false-positive rate.
"""

WITH_NAMES = [
    # common pt-BR names, capitalised
    ("cliente Ana Paula pediu o estorno da fatura", "Ana Paula"),
    ("falar com Carlos Eduardo Lima sobre o boleto", "Carlos Eduardo Lima"),
    ("o pedido de Mariana Rocha está parado desde segunda", "Mariana Rocha"),
    ("transferir 300 reais para Rafael Nogueira", "Rafael Nogueira"),
    ("a gerente Fernanda Alves aprovou o limite", "Fernanda Alves"),
    # rare pt-BR names
    ("cliente Deusdete Ferreira quer cancelar o plano", "Deusdete Ferreira"),
    ("pagar a fatura de Valdirene Santos até sexta", "Valdirene Santos"),
    ("ligar para Jucelino Bezerra depois das 14h", "Jucelino Bezerra"),
    ("o motorista Edivaldo Pimentel não apareceu", "Edivaldo Pimentel"),
    ("reembolso pedido por Gildásio Menezes", "Gildásio Menezes"),
    ("a senhora Creusa Amaral ligou três vezes", "Creusa Amaral"),
    ("contrato assinado por Waldisney Correia", "Waldisney Correia"),
    ("mensagem de Rosimeire Teixeira sobre a entrega", "Rosimeire Teixeira"),
    ("Jailson Batista pediu segunda via do boleto", "Jailson Batista"),
    ("a conta de Kleberson Moura foi bloqueada", "Kleberson Moura"),
    ("dona Iracema Tavares reclamou do atraso", "Iracema Tavares"),
    ("o técnico Uilian Farias vai visitar o cliente", "Uilian Farias"),
    # international names
    ("cliente Oluwaseun Adeyemi pediu reembolso em dólares", "Oluwaseun Adeyemi"),
    ("reunião com Hiroshi Tanaka às 10h", "Hiroshi Tanaka"),
    ("a fatura de Siobhan O'Connor venceu ontem", "Siobhan O'Connor"),
    ("enviar o contrato para Wojciech Kowalski", "Wojciech Kowalski"),
    ("o pedido de Priya Raghunathan foi entregue", "Priya Raghunathan"),
    ("Giovanni Rossi quer mudar o endereço de entrega", "Giovanni Rossi"),
    ("transferência para Ingrid Johansson recusada", "Ingrid Johansson"),
    ("falar com Mehmet Yılmaz sobre a importação", "Mehmet Yılmaz"),
    ("a conta de Nguyen Van Thanh está bloqueada", "Nguyen Van Thanh"),
    ("Dmitri Ivanov pediu o cancelamento", "Dmitri Ivanov"),
    ("cliente Aoife Gallagher sem acesso ao app", "Aoife Gallagher"),
    ("pagamento de Kwame Mensah em análise", "Kwame Mensah"),
    ("o fornecedor Jürgen Müller mandou a nota", "Jürgen Müller"),
    ("a advogada Fatima Zahra Benali enviou o ofício", "Fatima Zahra Benali"),
    ("Sven Lindqvist não recebeu o código", "Sven Lindqvist"),
    ("o pedido de Chiamaka Okafor chegou aberto", "Chiamaka Okafor"),
    ("cliente Thiago Nakamura pediu desconto", "Thiago Nakamura"),
    # lower-case names
    ("falei com joão pedro ontem sobre o boleto", "joão pedro"),
    ("cliente maria aparecida quer parcelar", "maria aparecida"),
    ("transferir para lucas oliveira 200 reais", "lucas oliveira"),
    ("o pedido da francisca chegou quebrado", "francisca"),
    ("avisa o rodrigo que a nota saiu", "rodrigo"),
    ("a conta da beatriz souza foi aberta hoje", "beatriz souza"),
    ("pagar o aluguel do sebastião amanhã", "sebastião"),
    ("ligar pra patricia sobre a entrega", "patricia"),
    ("cliente giovanni rossi sem resposta", "giovanni rossi"),
    ("falar com hiroshi amanhã cedo", "hiroshi"),
    ("mandar o recibo para valdirene", "valdirene"),
    ("o gerente é o wellington, não o marcos", "wellington"),
    # surnames alone, after a title or a greeting
    ("o Sr. Albuquerque pediu o extrato", "Albuquerque"),
    ("a Dra. Vasconcelos assinou o laudo", "Vasconcelos"),
    ("Prezado Sr. Kowalski, segue a fatura", "Kowalski"),
    ("bom dia, Sra. Tanaka, seu pedido saiu", "Tanaka"),
    ("o Dr. Okonkwo pediu remarcação", "Okonkwo"),
    # names at the start of the text or after punctuation
    ("Rosângela: quero cancelar minha assinatura", "Rosângela"),
    ("Oi, sou o Emerson e quero falar do boleto", "Emerson"),
    ("Obrigado, Jaqueline! O estorno caiu.", "Jaqueline"),
    ("assinado: Marcelo Quintanilha", "Marcelo Quintanilha"),
    ("De: Ayşe Demir. Assunto: nota fiscal", "Ayşe Demir"),
    # names inside tool outputs and notes
    ("erro 404 ao buscar o perfil de Leandro Siqueira", "Leandro Siqueira"),
    ("nota do agente: Cleide confirmou o endereço", "Cleide"),
    ("ticket aberto por Anderson Figueiredo às 09:12", "Anderson Figueiredo"),
    ("responsável: Tatiane Prado (financeiro)", "Tatiane Prado"),
]

WITHOUT_NAMES = [
    "o pedido chegou sem nota fiscal",
    "transferir 300 reais para a conta poupança",
    "pagar a fatura do cartão até sexta",
    "agendar o aluguel para o dia 5",
    "estornar 120 reais do fornecedor",
    "o cliente quer cancelar o plano",
    "erro 500 ao chamar a API de pagamentos",
    "a entrega atrasou dois dias",
    "o tempo em São Paulo está instável",
    "enviar o boleto pelo WhatsApp",
    "abrir o relatório no Google Chrome",
    "a nota saiu pelo Banco do Brasil",
    "o Itaú recusou a transferência",
    "pedido feito pelo app na Black Friday",
    "reunião marcada para Janeiro",
    "a filial de Belo Horizonte fechou mais cedo",
    "cliente de Porto Alegre pediu segunda via",
    "o PDF veio em branco",
    "Bom dia, quero saber do meu pedido",
    "Obrigado pelo retorno!",
    "O boleto venceu ontem",
    "Segue em anexo a Nota Fiscal",
    "a Receita Federal bloqueou o CNPJ",
    "o pagamento via Pix caiu",
    "o Mercado Livre cobrou o frete duas vezes",
    "a rosa do jardim estava no pacote",
    "faltou luz no depósito ontem",
    "a paz do bairro voltou depois da obra",
    "a entrega no Rio de Janeiro foi devolvida",
    "o servidor da Amazon Web Services caiu",
    "Atenção: a senha expirou",
    "a conta foi aberta no Nubank",
    "o cliente mora em Salvador",
    "o pedido saiu de Vitória da Conquista",
    "a loja do Shopping Center Norte fechou",
    "Prezados, segue o relatório mensal",
    "a impressora HP parou de funcionar",
    "o seguro da Porto Seguro venceu",
    "Sexta-feira não há expediente",
    "o contrato da Petrobras foi renovado",
    "a Microsoft Teams caiu durante a reunião",
    "cliente pediu o extrato de Março",
    "a encomenda passou por Curitiba",
    "o Natal aumentou as vendas",
    "o código de rastreio não funciona",
]


# A second set, **synthetic**, written after the detector above was written and tuned on the first set,
# committed before the detector was run on it, and never used to change the detector: its figures are the
# less flattering, fairer ones (the first set's rules were chosen while reading its misses).
UNSEEN_WITH_NAMES = [
    ("cliente Adalgisa Brandão pediu a segunda via", "Adalgisa Brandão"),
    ("falar com Ezequiel Damasceno sobre o frete", "Ezequiel Damasceno"),
    ("a fatura de Marinalva Cordeiro está em aberto", "Marinalva Cordeiro"),
    ("Yuki Watanabe confirmou o endereço", "Yuki Watanabe"),
    ("enviar o código para Bartholomew Finch", "Bartholomew Finch"),
    ("o pedido de Zanele Dlamini foi extraviado", "Zanele Dlamini"),
    ("ligar para Agnieszka Nowak amanhã", "Agnieszka Nowak"),
    ("reembolso aprovado para Lorenzo Bianchi", "Lorenzo Bianchi"),
    ("a Sra. Figueiredo ligou de novo", "Figueiredo"),
    ("o Dr. Haddad mandou o atestado", "Haddad"),
    ("falei com cristiane ontem à noite", "cristiane"),
    ("o boleto do anderson venceu", "anderson"),
    ("pagar o conserto da luana semana que vem", "luana"),
    ("avisa a priscila que o pix caiu", "priscila"),
    ("transferir para matheus henrique 50 reais", "matheus henrique"),
    ("Ednaldo: meu cartão foi recusado", "Ednaldo"),
    ("atendente Raimunda Lopes encerrou o chamado", "Raimunda Lopes"),
    ("o entregador Josivaldo Nunes deixou na portaria", "Josivaldo Nunes"),
    ("Olá, aqui é a Solange do financeiro", "Solange"),
    ("chamado aberto por Kenji Mori às 08:40", "Kenji Mori"),
]

UNSEEN_WITHOUT_NAMES = [
    "o cartão foi recusado na maquininha",
    "a encomenda chegou em Manaus com atraso",
    "o pagamento pelo PagSeguro falhou",
    "a agência de Campinas pediu documentos",
    "o cliente quer falar com um atendente",
    "Feliz Natal e boas festas a todos",
    "o voo para Lisboa foi cancelado",
    "a nota fiscal da Magazine Luiza veio errada",
    "a loja da Rua Augusta fechou",
    "o app do Bradesco está fora do ar",
    "Olá, tudo bem? Preciso de ajuda",
    "o frete para Recife ficou caro",
    "o boleto da Claro venceu em Abril",
    "a conta da Vivo chegou duplicada",
    "o pedido foi entregue na Avenida Paulista",
    "a rosa e a margarida chegaram murchas",
    "o sistema do SERASA está lento",
    "a Caixa Econômica liberou o saque",
    "fechamento do mês de Dezembro atrasou",
    "a troca foi feita na Americanas",
]
